// Package merge combines load-test results into one: the segments of a
// test split over several generator processes (oipkit load --segment) into
// the whole test's result, or several runs of one configuration into
// their sum — by adding counts and merging HdrHistograms bin for bin, never
// by averaging percentiles, as HdrHistogram's own log merging does.
//
// It is a package of its own because it is policy on top of the engine's
// results, not part of running a test: package loadgen measures and
// records; merge, like render and search, only uses what a run returns.
// [CheckSegments] says why results cannot be merged as one test's segments;
// [Merge] merges them, recording what they differ in and which segments
// are missing or failed, so that a merged result missing any is incomplete
// (loadgen.Judge), never just smaller.
package merge
