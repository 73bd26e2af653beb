// Package lab is sluice's comparison lab, the work behind cmd/bench: the
// runner that sets sluice's cmd/echo side by side with its peers (a gnet v2
// and a standard-library echo server, and the C epoll and io_uring floor
// servers), the overload bench (goodput at several times capacity, memory
// under peers that do not read, the listen gate, full accept queues), the
// report models, markdown and SVG charts.
//
// The lab is a module of its own (github.com/sluicenet/sluice/lab, in lab/ of
// the repository), so that the product's go.mod carries none of its
// dependencies (gnet, gonum); it reaches the product through a replace
// directive to the checkout above it, whose cmd/echo it builds from source.
//
// lab owns:
//
//   - The comparison runner (Compare, CompareConfig, Report): builds the
//     product's cmd/echo (SluiceDir) and the C peers (lab/peers/c), starts every server as its own process pinned to the
//     server CPU and the generator (cmd/bench load) as its own process pinned
//     to the client CPU, alternates the servers within each round, derives
//     the open-loop rates from the measured peak, and measures idle memory
//     per connection and the system-call mix.
//   - The overload bench (Overload, OverloadConfig, OverloadReport) and its
//     child processes' work (ConnFlood, PeerFlood).
//   - The overload matrix (Matrix, MatrixConfig, MatrixReport): every
//     server at several offered loads, works per frame, work modes and
//     connection counts, against the targets of docs/OVERLOAD.md.
//   - Reports: JSON, markdown tables and SVG charts (WriteReport,
//     WriteOverloadReport, WriteMatrixReport).
//
// lab refuses to own the load generator (package bench, which it drives as a
// child process), the peer servers (package lab/peers) and flag parsing
// (package lab/cli). Its types describe one lab's runs and change with them;
// nothing outside the lab module should build on them.
//
// Linux only: the runner pins processes and reads /proc. Elsewhere Compare,
// Overload and Matrix return bench.ErrUnsupported.
//
// Usage:
//
//	rep, err := lab.Compare(ctx, lab.CompareConfig{Codec: bench.CodecLength})
//	_, err = lab.WriteReport(rep, "../docs/bench", "../docs/BENCHMARKS.md")
package lab
