package kv

// Command ids of the RESP command table; lookup maps a name to one.
const (
	cmdPing = iota
	cmdEcho
	cmdGet
	cmdSet
	cmdDel
	cmdIncr
	cmdExists
	cmdMGet
	cmdMSet
	cmdCommand
	cmdInfo
	cmdQuit
	cmdConfig
	cmdSelect
	numCommands
)

// commandSpec describes one command the way redis's COMMAND and COMMAND DOCS
// do, so redis-cli and client libraries can read it.
type commandSpec struct {
	name    string   // lower case, as redis reports names
	arity   int      // > 0: exactly; < 0: at least -arity (the name included)
	flags   []string // COMMAND flags
	first   int      // first key argument (0: none)
	last    int      // last key argument (-1: the last argument)
	step    int      // step between keys
	group   string   // COMMAND DOCS group
	summary string   // COMMAND DOCS summary
	since   string   // the redis version that introduced the command
}

// commands is the command table, indexed by command id.
var commands = [numCommands]commandSpec{
	cmdPing:    {"ping", -1, []string{"fast", "stale"}, 0, 0, 0, "connection", "Returns the server's liveliness response.", "1.0.0"},
	cmdEcho:    {"echo", 2, []string{"fast"}, 0, 0, 0, "connection", "Returns the given string.", "1.0.0"},
	cmdGet:     {"get", 2, []string{"readonly", "fast"}, 1, 1, 1, "string", "Returns the string value of a key.", "1.0.0"},
	cmdSet:     {"set", -3, []string{"write", "denyoom"}, 1, 1, 1, "string", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", "1.0.0"},
	cmdDel:     {"del", -2, []string{"write"}, 1, -1, 1, "generic", "Deletes one or more keys.", "1.0.0"},
	cmdIncr:    {"incr", 2, []string{"write", "denyoom", "fast"}, 1, 1, 1, "string", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", "1.0.0"},
	cmdExists:  {"exists", -2, []string{"readonly", "fast"}, 1, -1, 1, "generic", "Determines whether one or more keys exist.", "1.0.0"},
	cmdMGet:    {"mget", -2, []string{"readonly", "fast"}, 1, -1, 1, "string", "Returns the string values of one or more keys (each key read atomically, not all together).", "1.0.0"},
	cmdMSet:    {"mset", -3, []string{"write", "denyoom"}, 1, -1, 2, "string", "Sets the string values of one or more keys (each key atomically, not all together).", "1.0.1"},
	cmdCommand: {"command", -1, []string{"loading", "stale"}, 0, 0, 0, "server", "Returns detailed information about all commands.", "2.8.13"},
	cmdInfo:    {"info", -1, []string{"loading", "stale"}, 0, 0, 0, "server", "Returns information and statistics about the server, with a sluice section for the engine.", "1.0.0"},
	cmdQuit:    {"quit", -1, []string{"fast", "loading", "stale"}, 0, 0, 0, "connection", "Closes the connection.", "1.0.0"},
	cmdConfig:  {"config", -2, []string{"admin", "loading", "stale"}, 0, 0, 0, "server", "Returns the effective values of configuration parameters (GET only).", "2.0.0"},
	cmdSelect:  {"select", 2, []string{"loading", "stale", "fast"}, 0, 0, 0, "connection", "Changes the selected database (only database 0 exists).", "1.0.0"},
}

// maxCommandName is the longest name lookup considers.
const maxCommandName = 16

// lookup returns the id of the command named name (ASCII case-insensitive),
// or -1. It does not allocate: the switch on string(bytes) of a stack array
// is compiled without a conversion.
func lookup(name []byte) int {
	if len(name) > maxCommandName {
		return -1
	}
	var up [maxCommandName]byte
	for i, c := range name {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		up[i] = c
	}
	switch string(up[:len(name)]) {
	case "GET":
		return cmdGet
	case "SET":
		return cmdSet
	case "PING":
		return cmdPing
	case "ECHO":
		return cmdEcho
	case "DEL":
		return cmdDel
	case "INCR":
		return cmdIncr
	case "EXISTS":
		return cmdExists
	case "MGET":
		return cmdMGet
	case "MSET":
		return cmdMSet
	case "COMMAND":
		return cmdCommand
	case "INFO":
		return cmdInfo
	case "QUIT":
		return cmdQuit
	case "CONFIG":
		return cmdConfig
	case "SELECT":
		return cmdSelect
	}
	return -1
}

// arityOK reports whether n arguments (the name included) suit c.
func (c *commandSpec) arityOK(n int) bool {
	if c.arity > 0 {
		return n == c.arity
	}
	return n >= -c.arity
}

// configParams are the parameters CONFIG GET answers: what redis-benchmark
// asks for (save, appendonly) and a few that describe this server truthfully.
// The value of maxmemory is filled in from the store's budget.
var configParams = []string{"save", "appendonly", "maxmemory", "databases"}
