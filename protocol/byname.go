package protocol

import "fmt"

// Codec names accepted by ByName, as used by the command-line tools.
const (
	NameRaw    = "raw"    // Raw
	NameLength = "length" // LengthPrefixed with a Fixed32 (4-byte big-endian) header
	NameVarint = "varint" // LengthPrefixed with a Uvarint header
	NameLine   = "line"   // Delimited by '\n'
	// LengthField{Size: 2}: a 2-byte big-endian length of the body
	NameLength16 = "length16"
)

// Names lists the names ByName accepts, for flag help texts.
func Names() []string {
	return []string{NameRaw, NameLength, NameLength16, NameLine, NameVarint}
}

// ByName returns the codec called name ("raw", "length", "length16", "line"
// or "varint")
// with maxFrameBytes as its limit (0 means DefaultMaxFrameBytes; Raw has no
// limit of its own). An unknown name is ErrUnknownCodec; a negative
// maxFrameBytes is ErrInvalidConfig.
func ByName(name string, maxFrameBytes int) (Codec, error) {
	if maxFrameBytes < 0 {
		return nil, fmt.Errorf("%w: %d", errNegativeMax, maxFrameBytes)
	}
	switch name {
	case NameRaw:
		return Raw{}, nil
	case NameLength:
		return LengthPrefixed{Header: Fixed32, MaxFrameBytes: maxFrameBytes}, nil
	case NameVarint:
		return LengthPrefixed{Header: Uvarint, MaxFrameBytes: maxFrameBytes}, nil
	case NameLength16:
		return LengthField{Size: 2, MaxFrameBytes: maxFrameBytes}, nil
	case NameLine:
		return Delimited{Delim: DefaultDelim, MaxFrameBytes: maxFrameBytes}, nil
	}
	return nil, fmt.Errorf("%w %q (want raw, length, length16, line or varint)", ErrUnknownCodec, name)
}
