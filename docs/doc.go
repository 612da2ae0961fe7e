// Package docs holds the guides of sessionstore (the *.md files beside
// this one) and nothing to import: its test compiles every Go snippet of
// the guides and of the README, so that none can drift from the API.
// The guides' sessionctl transcripts run in cmd/sessionctl's
// TestDocTranscripts.
package docs
