// Package ownkeys is the one definition of the keys s3once writes: output
// file names, side objects, and the probes of the preflight and the sweep.
// Everything that deletes, aborts or reads by a key it did not just make
// (the writer's Cleanup and Recover, the committer's clean-up, the sweep,
// the sink's commit stage) asks this package whether the key is s3once's own
// before it touches it; the builders here are the only place those keys are
// spelled out.
//
// Prefixes are folders: Folder("events") is "events/", and "events" never
// holds "events-v2/...". The empty prefix is the bucket's root.
//
// The keys:
//
//	output file      <prefix>/<destination>/<window>-pane-<n>-shard-<SSSSS>-of-<NNNNN>[-batch-<BB>-of-<MM>]-file-<FFFFF><ext>
//	side object      <staging>/<escaped upload ID>/<seq: 20 digits>[-<nonce>]
//	preflight        <prefix>/_s3once_preflight/<id>   (an upload, never completed)
//	                 <staging>/preflight/<id>/side     (an object)
//	                 <staging>/preflight/<id>/complete (an upload, then an object)
//	write probe      <staging>/preflight-<name>        (the committer's If-None-Match probe)
//	clock probe      <staging>/clock/<name>            (a sweep, where replies carry no Date)
//	completion mark  <prefix>/_SUCCESS[-<window>][-pane-<n>]
//	settings marker  <prefix>/_s3once_settings          (the folder's byte-affecting settings)
//
// Side objects written by early releases have no nonce; both forms are
// s3once's. An upload ID is one key segment (bytes outside [A-Za-z0-9._-]
// escaped as %XX), and never "." or "..", which file-backed servers could
// read as a step up the path.
//
// Markers (completion markers, the settings marker) are written once and
// kept: the sweep deletes only side objects and probes, and no predicate of
// those takes a marker's key. Readers of "the output files" skip both kinds
// (IsMarker, IsSettings; IsSettingsAnywhere for a listing of several
// folders).
//
// The package imports only the standard library, so every layer can use it.
package ownkeys
