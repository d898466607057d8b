package ownkeys

import "strings"

// SettingsName is the base name of the settings marker, the object that
// records the byte-affecting settings of the files in its folder. It starts
// with '_', so Spark, Hive, Trino and Athena skip it as they skip _SUCCESS.
const SettingsName = "_s3once_settings"

// SettingsKey is the key of the settings marker of the output folder prefix:
// <prefix folder>_s3once_settings. It is written once (If-None-Match) and
// never deleted, aborted or overwritten by s3once.
func SettingsKey(prefix string) string { return Folder(prefix) + SettingsName }

// IsSettings reports whether key is the settings marker of the output folder
// prefix.
func IsSettings(prefix, key string) bool { return key == SettingsKey(prefix) }

// IsSettingsAnywhere reports whether key is the settings marker of some
// folder: its last segment is SettingsName. Readers that list several
// output folders at once (a bucket, a parent folder) skip such keys.
func IsSettingsAnywhere(key string) bool {
	return key[strings.LastIndexByte(key, '/')+1:] == SettingsName
}
