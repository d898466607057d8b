//go:build !s3once_mutant

package icebergtable

func mutTableDiscardOnConflict() bool { return false }

func mutTableTrustStaleHead() bool { return false }
