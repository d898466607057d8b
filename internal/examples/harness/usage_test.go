package harness

import (
	"flag"
	"strings"
	"testing"
)

// After a mistyped flag, the usage lists the example's flags and points at
// --help-beam for Beam's, which it leaves out.
func TestUsageListsOwnFlagsFirst(t *testing.T) {
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	fs.String("runner", "", "Pipeline runner.")
	fs.String("endpoint", "", "Job service endpoint.")
	fs.String("environment_type", "", "Environment type.")
	u := NewUsage(fs, "batch")
	var sf SinkFlags
	sf.Register(fs, "corpus", "gzip")
	var out strings.Builder
	fs.SetOutput(&out)
	if err := fs.Parse([]string{"--bukcet", "x"}); err == nil {
		t.Fatal("a mistyped flag parsed")
	}
	text := out.String()
	for _, want := range []string{"-bukcet", "-bucket", "-s3-endpoint", "-help-beam", "--help-beam", "and 1 more"} {
		if !strings.Contains(text, want) {
			t.Errorf("usage does not say %q:\n%s", want, text)
		}
	}
	for _, beam := range []string{"-environment_type", "Pipeline runner."} {
		if strings.Contains(text, beam) {
			t.Errorf("usage lists Beam's %q:\n%s", beam, text)
		}
	}
	out.Reset()
	u.write(&out, true)
	if all := out.String(); !strings.Contains(all, "-environment_type") || strings.Index(all, "-bucket") > strings.Index(all, "-environment_type") {
		t.Errorf("--help-beam: want the example's flags, then Beam's:\n%s", all)
	}
}
