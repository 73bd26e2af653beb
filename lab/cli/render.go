package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/sluicenet/sluice/lab"
)

// runRender re-renders the markdown and charts of a saved report.json.
func runRender(args []string) error {
	fs := flag.NewFlagSet("bench render", flag.ExitOnError)
	in := fs.String("in", "../docs/bench/report.json", "report.json written by bench compare")
	out := fs.String("out", "../docs/bench", "directory for report.json, report.md and the SVG charts")
	doc := fs.String("doc", "", "markdown file whose generated section is replaced with the report (empty: none)")
	_ = fs.Parse(args)
	b, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	var rep lab.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	written, err := lab.WriteReport(&rep, *out, *doc)
	for _, p := range written {
		fmt.Fprintln(os.Stderr, "wrote", p)
	}
	return err
}
