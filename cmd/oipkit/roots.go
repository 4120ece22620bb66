package main

// The container image has no CA bundle of its own (it is the binary on an
// empty base). This package gives crypto/x509 Mozilla's roots, pinned by
// the module version, for when the system has none; a system bundle, where
// there is one, is still used instead.
import _ "golang.org/x/crypto/x509roots/fallback"
