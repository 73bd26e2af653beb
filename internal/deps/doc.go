// Package deps holds no code: its tests keep the framework's dependency
// footprint small. The product's go.mod and go.sum must not name the
// comparison lab's own dependencies (gnet, gonum's plot), which belong to the
// lab module in lab/; and an outside module that imports only the framework
// packages (server, protocol, admission) must not find the lab's or the
// examples' dependencies (gnet, gonum, zap, go-redis, and every module that
// only lab/go.mod requires) in its go.sum: the test builds such a module
// with go mod tidy and reads its go.sum.
//
// deps owns those checks and nothing else; the dependencies themselves are
// chosen by the packages that use them.
package deps
