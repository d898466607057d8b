package program

import (
	"fmt"
	"os"
	"strings"

	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
)

// LogLevelEnv names the environment variable that sets how much a program
// that imports this package logs: "debug", "info", "warn" (the default) or
// "error". A good run then prints only what the program prints (the
// README's program: its one result line); warnings and errors still show.
// S3ONCE_LOG_LEVEL=info brings back the runner's progress lines (the
// embedded runner's job and worker lines, the sink's notes on how it
// commits). It takes effect at beam.Init, which reads the level, so it
// applies to the launcher and to workers that run the same binary.
const LogLevelEnv = "S3ONCE_LOG_LEVEL"

// defaultLogLevel is the level without LogLevelEnv: the runner's INFO
// lines (13 on a good run of the README's program on the embedded runner)
// say nothing a user acts on.
const defaultLogLevel = "warn"

func init() { beamlog.LogLevel = logLevel(os.Getenv(LogLevelEnv)) }

// logLevel is Beam's log level for the value of LogLevelEnv: the value
// when it is one Beam takes (Beam ends the program on any other), else the
// default, with a line saying so.
func logLevel(v string) string {
	switch l := strings.ToLower(strings.TrimSpace(v)); l {
	case "":
		return defaultLogLevel
	case "debug", "info", "warn", "error":
		return l
	default:
		fmt.Fprintf(os.Stderr, "s3once: %s=%q is not debug, info, warn or error; logging at %s\n", LogLevelEnv, v, defaultLogLevel)
		return defaultLogLevel
	}
}
