//go:build !s3once_mutant

package icebergtable

func mutTableDiscardOnConflict() bool { return false }

func mutTableTrustStaleHead() bool { return false }

func mutTableDiscardOnAmbiguous() bool { return false }

func mutTableErrorAsLanded() bool { return false }

func mutTableSkipRunLookup() bool { return false }
