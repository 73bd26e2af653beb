// Package deps holds no code: its test keeps the framework's dependency
// footprint small. An outside module that imports only the framework
// packages (server, protocol, admission) must not find the comparison lab's
// dependencies (gnet, gonum, zap, go-redis) in its go.sum; the test builds
// such a module with go mod tidy and reads its go.sum.
//
// deps owns that check and nothing else; the dependencies themselves are
// chosen by the packages that use them.
package deps
