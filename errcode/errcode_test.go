package errcode

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestTokenSurvivesWrappingAndText(t *testing.T) {
	sentinel := New(KeyTaken, "another object is at the key")
	if got, want := sentinel.Error(), "another object is at the key [s3once:key-taken]"; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("s3once sink: commit s3://b/k (upload u): %w; a hint", sentinel)
	if c, ok := Of(wrapped); !ok || c != KeyTaken {
		t.Fatalf("Of(wrapped) = %q, %v; want %q", c, ok, KeyTaken)
	}
	// What a runner hands back: the text alone, inside its own report.
	runner := errors.New("job failed: stage 3: process bundle failed:\n\tcaused by:\n" + wrapped.Error() + "\n")
	if !Has(runner, KeyTaken) || Has(runner, DataLost) {
		t.Fatalf("Has on the runner's text: key-taken %v, data-lost %v", Has(runner, KeyTaken), Has(runner, DataLost))
	}
	var coded interface{ Code() Code }
	if !errors.As(wrapped, &coded) || coded.Code() != KeyTaken {
		t.Fatalf("the sentinel's Code method is not reachable through wrapping")
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want []Code
	}{
		{"", nil},
		{"no token here", nil},
		{"[s3once:]", nil},
		{"[s3once:Key-Taken]", nil},
		{"[s3once:key taken]", nil},
		{"[s3once:key-taken", nil},
		{"[s3once:[s3once:data-lost]", []Code{DataLost}},
		{"a [s3once:invalid-config]: b [s3once:folders-overlap]: c", []Code{InvalidConfig, FoldersOverlap}},
		{"[s3once:key-taken][s3once:key-taken]", []Code{KeyTaken, KeyTaken}},
		{"[s3once:some-future-code-2]", []Code{"some-future-code-2"}},
	} {
		if got := All(tc.msg); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("All(%q) = %q, want %q", tc.msg, got, tc.want)
		}
		c, ok := InMessage(tc.msg)
		if ok != (len(tc.want) > 0) || (ok && c != tc.want[0]) {
			t.Errorf("InMessage(%q) = %q, %v", tc.msg, c, ok)
		}
	}
	if c, ok := Of(nil); ok || c != "" {
		t.Errorf("Of(nil) = %q, %v", c, ok)
	}
	if Has(nil, KeyTaken) {
		t.Errorf("Has(nil) is true")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("x [s3once:key-taken] y")
	f.Fuzz(func(t *testing.T, msg string) {
		for _, c := range All(msg) {
			if got, ok := InMessage(c.Token()); !ok || got != c {
				t.Fatalf("token %q of %q does not parse back", c.Token(), msg)
			}
		}
	})
}
