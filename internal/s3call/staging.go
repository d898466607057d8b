package s3call

// DefaultStagingPrefix is the folder of side objects and probes when a
// configuration names none.
const DefaultStagingPrefix = ".s3once/staging/"

// StagingPrefix returns prefix, or DefaultStagingPrefix when prefix is empty.
// Every place that takes a staging prefix from its caller applies the default
// through it.
func StagingPrefix(prefix string) string {
	if prefix == "" {
		return DefaultStagingPrefix
	}
	return prefix
}
