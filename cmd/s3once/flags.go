package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// errHelp: the user asked for help, which was printed: exit 0.
var errHelp = errors.New("help requested")

// newFlagSet returns a flag set that reports errors instead of exiting; its
// usage is the header, then the flags.
func newFlagSet(name, header string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), header)
		fmt.Fprintln(fs.Output(), "\nFlags (one dash or two):")
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, turning -h into errHelp (usage printed to stdout) and
// other problems into usage errors.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return errHelp
	}
	if err != nil {
		return usagef("%v", err)
	}
	return nil
}

// age is a flag holding a duration that also takes days ("7d", "1.5d").
type age struct{ d time.Duration }

func (a *age) String() string {
	if a == nil || a.d == 0 {
		return ""
	}
	return a.d.String()
}

func (a *age) Set(s string) error {
	d, err := parseAge(s)
	if err != nil {
		return err
	}
	a.d = d
	return nil
}

// parseAge reads a Go duration ("36h", "90m") or a number of days ("7d").
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n <= 0 || n > 36500 {
			return 0, fmt.Errorf("bad age %q: want a positive number of days (7d) or a duration (36h)", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad age %q: want a positive duration (36h, 90m) or days (7d)", s)
	}
	return d, nil
}
