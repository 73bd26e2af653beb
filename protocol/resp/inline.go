package resp

import "bytes"

// scanInline walks an inline command: one line ending in "\n" or "\r\n",
// split into arguments the way redis-server's sdssplitargs splits it.
// n == 0 && err == nil means more input is needed.
func scanInline(buf []byte, lim *limits, args [][]byte, collect bool) (n int, out [][]byte, err error) {
	// The longest acceptable frame is a line of maxInline bytes plus
	// "\r\n", or maxCmd bytes if that is less; without a '\n' in that
	// many bytes the command can never fit.
	limit, tooLarge := lim.maxInline+2, ErrInlineTooLarge
	if lim.maxCmd < limit {
		limit, tooLarge = lim.maxCmd, ErrCommandTooLarge
	}
	window := buf
	if len(window) > limit {
		window = window[:limit]
	}
	nl := bytes.IndexByte(window, '\n')
	if nl < 0 {
		if len(buf) >= limit {
			return 0, args, tooLarge
		}
		return 0, args, nil
	}
	end := nl
	if end > 0 && buf[end-1] == '\r' {
		end--
	}
	if end > lim.maxInline {
		return 0, args, ErrInlineTooLarge
	}
	out, err = splitInline(buf[:end], args, collect, lim.maxArgs)
	if err != nil {
		return 0, args, err
	}
	return nl + 1, out, nil
}

// isSpace reports C's isspace for the bytes sdssplitargs skips between
// arguments.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// endsArg reports the bytes that end an unquoted argument. Unlike C, NUL is
// an ordinary byte here: Go slices carry their length.
func endsArg(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// splitInline splits line into arguments with sdssplitargs's rules:
// arguments are separated by white space; "double quotes" allow the escapes
// \n \r \t \b \a \xHH and \<any>; 'single quotes' allow \'; quotes may start
// in the middle of an argument; a closing quote must be followed by white
// space or the end of the line. When collect is set the unquoted text of
// each argument is written in place, starting where its source starts
// (never overtaking the read position), and appended to args.
func splitInline(line []byte, args [][]byte, collect bool, maxArgs int) ([][]byte, error) {
	count := 0
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, nil
		}
		count++
		if count > maxArgs {
			return args, ErrTooManyArgs
		}
		// w is where the next unquoted byte goes. It equals i until the first
		// quote and trails it afterwards, so unquoted arguments are only read
		// and quoted ones are rewritten in place (only when collecting).
		start, w := i, i
		inDouble, inSingle := false, false
	arg:
		for {
			switch {
			case inDouble:
				if i == len(line) {
					return args, ErrUnbalancedQuotes
				}
				c := line[i]
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					if collect && w != i {
						line[w] = unhex(line[i+2])<<4 | unhex(line[i+3])
					}
					w++
					i += 4
				case c == '\\' && i+1 < len(line):
					if collect && w != i {
						line[w] = unescape(line[i+1])
					}
					w++
					i += 2
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return args, ErrUnbalancedQuotes
					}
					i++
					break arg
				default:
					if collect && w != i {
						line[w] = c
					}
					w++
					i++
				}
			case inSingle:
				if i == len(line) {
					return args, ErrUnbalancedQuotes
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					if collect && w != i {
						line[w] = '\''
					}
					w++
					i += 2
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return args, ErrUnbalancedQuotes
					}
					i++
					break arg
				default:
					if collect && w != i {
						line[w] = c
					}
					w++
					i++
				}
			default:
				if i == len(line) || endsArg(line[i]) {
					break arg
				}
				switch c := line[i]; c {
				case '"':
					inDouble = true
				case '\'':
					inSingle = true
				default:
					if collect && w != i {
						line[w] = c
					}
					w++
				}
				i++
			}
		}
		if collect {
			args = append(args, line[start:w:w])
		}
	}
}

// unescape maps the byte after a backslash in double quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
