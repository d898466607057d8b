package harness

import (
	"flag"
	"fmt"
	"io"
	"os"
)

// Usage keeps Beam's flags out of an example's usage message: Beam
// registers some hundred and fifty flags of its own in the same flag set,
// which would bury the example's few under them after a mistyped flag.
// --help-beam lists them all.
type Usage struct {
	fs       *flag.FlagSet
	name     string
	beam     map[string]bool
	helpBeam bool
}

// NewUsage takes the flags fs holds now as Beam's, so it must be called
// before the program registers its own; it sets fs's usage message and
// adds --help-beam.
func NewUsage(fs *flag.FlagSet, name string) *Usage {
	u := &Usage{fs: fs, name: name, beam: map[string]bool{}}
	fs.VisitAll(func(f *flag.Flag) { u.beam[f.Name] = true })
	fs.BoolVar(&u.helpBeam, "help-beam", false, "list Beam's own flags too (runner, job service, environment, ...)")
	fs.Usage = func() { u.write(fs.Output(), false) }
	return u
}

// Parse parses args into the flag set; with --help-beam it prints every
// flag and exits.
func (u *Usage) Parse(args []string) {
	_ = u.fs.Parse(args) // ExitOnError (flag.CommandLine): errors exit
	if u.helpBeam {
		u.write(os.Stdout, true)
		os.Exit(ExitOK)
	}
}

// write prints the program's flags, and Beam's when all is set.
func (u *Usage) write(w io.Writer, all bool) {
	fmt.Fprintf(w, "Usage of %s (s3once's %s example):\n", u.fs.Name(), u.name)
	u.print(w, func(name string) bool { return !u.beam[name] })
	if all {
		fmt.Fprintln(w, "\nBeam's own flags:")
		u.print(w, func(name string) bool { return u.beam[name] })
		return
	}
	fmt.Fprintf(w, "\nBeam's own flags (--runner, --endpoint for a job service, and %d more) are listed by --help-beam.\n", len(u.beam)-2)
}

// print lists the flags keep accepts, as flag.PrintDefaults does.
func (u *Usage) print(w io.Writer, keep func(string) bool) {
	var sub flag.FlagSet
	u.fs.VisitAll(func(f *flag.Flag) {
		if keep(f.Name) {
			sub.Var(f.Value, f.Name, f.Usage)
			sub.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	sub.SetOutput(w)
	sub.PrintDefaults()
}
