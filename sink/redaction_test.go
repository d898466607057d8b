package sink

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestConfigPrintsNoSecret: a Config that names an SSE-C key and static
// credentials (each variable set here to a recognizable secret) prints no
// secret under any verb, in JSON or in a log line; nor do the settings
// made of it, which the DoFns carry, nor the request settings built on a
// worker, which hold the SSE-C key's bytes.
func TestConfigPrintsNoSecret(t *testing.T) {
	key := []byte("ssec-key-recognizable-0123456789") // 32 bytes
	const secret, token = "s3-secret-recognizable-7c1e", "s3-token-recognizable-52aa"
	t.Setenv("S3ONCE_TEST_SSEC_KEY", base64.StdEncoding.EncodeToString(key))
	t.Setenv("S3ONCE_TEST_KEY_ID", "AKIDRECOGNIZABLE")
	t.Setenv("S3ONCE_TEST_SECRET", secret)
	t.Setenv("S3ONCE_TEST_TOKEN", token)
	cfg := Config{Bucket: "redaction-bucket", Prefix: "out",
		Connection: Connection{Endpoint: "http://127.0.0.1:1", PathStyle: true, Credentials: Credentials{
			AccessKeyIDEnv: "S3ONCE_TEST_KEY_ID", SecretAccessKeyEnv: "S3ONCE_TEST_SECRET", SessionTokenEnv: "S3ONCE_TEST_TOKEN"}},
		Requests: Requests{SSECustomerKeyEnv: "S3ONCE_TEST_SSEC_KEY"}}
	st, err := cfg.settings()
	if err != nil {
		t.Fatal(err)
	}
	built, err := st.Requests.build()
	if err != nil {
		t.Fatal(err)
	}
	if !built.CustomerKey.IsSet() {
		t.Fatal("the built request settings hold no SSE-C key: the check below would look at nothing")
	}
	var forms []string
	for _, s := range []string{string(key), secret, token} {
		forms = append(forms, s, hex.EncodeToString([]byte(s)), base64.StdEncoding.EncodeToString([]byte(s)))
	}
	shows := func(out string) string {
		for _, f := range forms {
			if strings.Contains(out, f) {
				return f
			}
		}
		return ""
	}
	var printed int
	for _, v := range []any{cfg, &cfg, st, st.folder, st.Requests, built} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			out := fmt.Sprintf(verb, v)
			printed += len(out)
			if f := shows(out); f != "" {
				t.Errorf("%s of %T shows %q: %s", verb, v, f, out)
			}
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		var log bytes.Buffer
		slog.New(slog.NewJSONHandler(&log, nil)).Info("config", "v", v)
		if f := shows(string(j) + log.String()); f != "" {
			t.Errorf("the JSON or a log line of %T shows %q: %s %s", v, f, j, log.String())
		}
	}
	if printed == 0 {
		t.Fatal("nothing was printed")
	}
	// The names are what is printed.
	if out := fmt.Sprintf("%+v", cfg); !strings.Contains(out, "S3ONCE_TEST_SECRET") || !strings.Contains(out, "S3ONCE_TEST_SSEC_KEY") {
		t.Errorf("%%+v of the Config does not name the variables: %s", out)
	}
}
