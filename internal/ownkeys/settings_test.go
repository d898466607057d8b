package ownkeys

import "testing"

// The settings marker has one key per output folder, and it is none of
// s3once's other keys: not a file, a completion marker, a probe or a staging
// key, so neither the commit stage nor the sweep ever takes it.
func TestSettingsKey(t *testing.T) {
	for _, tc := range []struct{ prefix, want string }{
		{"out", "out/_s3once_settings"},
		{"out/", "out/_s3once_settings"},
		{"a/b", "a/b/_s3once_settings"},
		{"", "_s3once_settings"},
	} {
		k := SettingsKey(tc.prefix)
		if k != tc.want {
			t.Errorf("SettingsKey(%q) = %q, want %q", tc.prefix, k, tc.want)
		}
		if !IsSettings(tc.prefix, k) || !IsSettingsAnywhere(k) {
			t.Errorf("%q is not recognised as the settings marker of %q", k, tc.prefix)
		}
		if IsFileName(tc.prefix, k) || IsMarker(tc.prefix, k) || IsProbe(tc.prefix, Folder(tc.prefix)+staging, k) ||
			IsOwnStaging(Folder(tc.prefix)+staging, k) {
			t.Errorf("%q is taken for another kind of key", k)
		}
	}
	for _, k := range []string{"out/_s3once_settings2", "out/x_s3once_settings", "out/_s3once_settings/x", "out/a/_s3once_settings"} {
		if IsSettings("out", k) {
			t.Errorf("IsSettings(out, %q) = true", k)
		}
	}
	if IsSettingsAnywhere("out/_s3once_settings/x") || IsSettingsAnywhere("out/_s3once_settingsx") {
		t.Error("IsSettingsAnywhere takes a key whose last segment is not the marker's name")
	}
	if IsSettings("", "out/_s3once_settings") || IsSettings("out", "_s3once_settings") {
		t.Error("a settings marker is taken for another folder's")
	}
}
