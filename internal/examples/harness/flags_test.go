package harness

import (
	"flag"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/s3once/s3once/sink"
)

// Every flag of the table sets its own sink.Config field and no other, and
// Config hands it on.
func TestSinkFlagsSetTheirConfigField(t *testing.T) {
	for i, e := range sinkFlagTable {
		var f SinkFlags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		f.Register(fs, "p", "gzip")
		before := f.Config()
		field := reflect.ValueOf(before).FieldByName(e.Field)
		var arg string
		switch field.Interface().(type) {
		case string:
			arg = fmt.Sprintf("v%d", i)
		case bool:
			arg = "true"
		case int, int64:
			arg = fmt.Sprint(1000 + i)
		case time.Duration:
			arg = fmt.Sprint(time.Duration(i+1) * time.Second)
		default:
			t.Fatalf("--%s: field %s of type %T", e.Name, e.Field, field.Interface())
		}
		if err := fs.Parse([]string{"--" + e.Name + "=" + arg}); err != nil {
			t.Fatalf("--%s=%s: %v", e.Name, arg, err)
		}
		after := f.Config()
		got := reflect.ValueOf(after).FieldByName(e.Field).Interface()
		if fmt.Sprint(got) != arg {
			t.Errorf("--%s=%s set Config.%s to %v", e.Name, arg, e.Field, got)
		}
		// Nothing else moved, but PathStyle, which an endpoint turns on.
		reflect.ValueOf(&after).Elem().FieldByName(e.Field).Set(field)
		if e.Field == "Endpoint" {
			after.PathStyle = before.PathStyle
		}
		if !reflect.DeepEqual(before, after) {
			t.Errorf("--%s changed other Config fields: %+v, was %+v", e.Name, after, before)
		}
	}
}

// The examples' defaults reach the Config; an endpoint implies path style.
func TestSinkFlagsDefaults(t *testing.T) {
	var f SinkFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.Register(fs, "events", "zstd")
	if err := fs.Parse([]string{"--bucket=b", "--s3-endpoint=http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	want := sink.Config{Bucket: "b", Prefix: "events", Files: sink.Files{Compression: "zstd"}, Connection: sink.Connection{Endpoint: "http://127.0.0.1:1", PathStyle: true}}
	if got := f.Config(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Config() = %+v, want %+v", got, want)
	}
	if f.PreflightTimeout != 2*time.Minute || f.SkipPreflight {
		t.Fatalf("preflight flags: timeout %v, skip %v", f.PreflightTimeout, f.SkipPreflight)
	}
}

// --s3_endpoint, the spelling of pipelines/minimal, sets the same field as
// --s3-endpoint.
func TestS3EndpointAlias(t *testing.T) {
	for _, name := range []string{"s3-endpoint", "s3_endpoint"} {
		var f SinkFlags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		f.Register(fs, "p", "gzip")
		if err := fs.Parse([]string{"--" + name + "=http://127.0.0.1:7070"}); err != nil {
			t.Fatal(err)
		}
		if got := f.Config(); got.Endpoint != "http://127.0.0.1:7070" || !got.PathStyle {
			t.Errorf("--%s: Endpoint %q, PathStyle %v", name, got.Endpoint, got.PathStyle)
		}
	}
}

// Messages naming a Config field that has a flag name the flag, for every
// field of the table; a field without a flag, or a longer name that starts
// like one, stays as it is.
func TestWithFlagNamesCoversTheTable(t *testing.T) {
	for _, e := range sinkFlagTable {
		if got, want := withFlagNames("set Config."+e.Field+"; done"), "set --"+e.Name+"; done"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	for _, keep := range []string{"Config.BucketKey", "Config.AccessKeyID", "Config.Bucketx"} {
		if got := withFlagNames("set " + keep); got != "set "+keep {
			t.Errorf("%s became %q", keep, got)
		}
	}
}
