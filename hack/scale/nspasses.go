package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Where a namespace's deletion goes, from kube-controller-manager's log: hack/sim/kwokctl.yaml
// runs it with its namespace controller's files at -v 4 and 5, so the log names each pass the
// controller makes over the namespace and each collection it deletes in it, one kind after the
// other (the API server deletes a collection's objects one at a time).

// nsPass is one pass of the namespace controller over a namespace being deleted.
type nsPass struct {
	start, end time.Time
	// collections are the kinds whose collection the pass deleted, in its order, with how
	// long each delete took (the delete's start → the controller's look for what remains).
	collections []nsCollection
	// wait is the controller's wait before its next pass when content remained (0: none said).
	wait time.Duration
	// failed is the pass's error ("Deletion of namespace failed": the next pass after a growing
	// backoff), if any.
	failed string
}

type nsCollection struct {
	resource string
	took     time.Duration
}

var (
	klogLine    = regexp.MustCompile(`^[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6})\s`)
	logResource = regexp.MustCompile(`resource="[^"]*Resource=([^"]+)"`)
	logWait     = regexp.MustCompile(`waitSeconds=(\d+)`)
	logErr      = regexp.MustCompile(`err="((?:[^"\\]|\\.)*)"`)
)

// namespacePasses reads the passes of the namespace controller over ns from the lines of
// kube-controller-manager's log; year is the year of the lines' times (klog's have none), in
// the local zone as klog writes them.
func namespacePasses(lines []string, ns string, year int) []nsPass {
	var passes []nsPass
	var collecting string
	var since time.Time
	quoted := `namespace="` + ns + `"`
	for _, l := range lines {
		if !strings.Contains(l, quoted) {
			continue
		}
		at, ok := klogTime(l, year)
		if !ok {
			continue
		}
		cur := func() *nsPass {
			if len(passes) == 0 {
				passes = append(passes, nsPass{start: at})
			}
			return &passes[len(passes)-1]
		}
		switch {
		case strings.Contains(l, `"Namespace controller - syncNamespace"`):
			passes = append(passes, nsPass{start: at})
			collecting = ""
		case strings.Contains(l, `"Namespace controller - deleteCollection"`):
			if m := logResource.FindStringSubmatch(l); m != nil {
				collecting, since = m[1], at
			}
		case strings.Contains(l, "checking for no more items in namespace"):
			if m := logResource.FindStringSubmatch(l); m != nil && m[1] == collecting {
				p := cur()
				p.collections = append(p.collections, nsCollection{resource: collecting, took: at.Sub(since)})
				collecting = ""
			}
		case strings.Contains(l, `"Finished syncing namespace"`):
			cur().end = at
		case strings.Contains(l, `"Content remaining in namespace"`):
			if m := logWait.FindStringSubmatch(l); m != nil {
				s, _ := strconv.Atoi(m[1])
				cur().wait = time.Duration(s) * time.Second
			}
		case strings.Contains(l, `"Deletion of namespace failed"`):
			p := cur()
			if m := logErr.FindStringSubmatch(l); m != nil {
				p.failed = m[1]
			} else {
				p.failed = "failed"
			}
		}
	}
	return passes
}

// klogTime is the time of a klog line (its header: Lmmdd hh:mm:ss.uuuuuu).
func klogTime(l string, year int) (time.Time, bool) {
	m := klogLine.FindStringSubmatch(l)
	if m == nil {
		return time.Time{}, false
	}
	n := make([]int, len(m)-1)
	for i, s := range m[1:] {
		n[i], _ = strconv.Atoi(s)
	}
	return time.Date(year, time.Month(n[0]), n[1], n[2], n[3], n[4], n[5]*1000, time.Local), true
}

// describePasses says where a namespace's deletion went, from its delete on: each pass's start
// and length, the collections in it that took at least slow, in the pass's order, and how it
// ended (a wait for what remained, a failure).
func describePasses(passes []nsPass, deleted time.Time, slow time.Duration) string {
	if len(passes) == 0 {
		return "no pass of the namespace controller in kube-controller-manager's log (its namespace files at -v 5: hack/sim/kwokctl.yaml)"
	}
	var out []string
	for _, p := range passes {
		s := fmt.Sprintf("pass at +%.1fs", p.start.Sub(deleted).Seconds())
		if !p.end.IsZero() {
			s += fmt.Sprintf(" (%.1fs)", p.end.Sub(p.start).Seconds())
		}
		var kinds []string
		var fast int
		for _, c := range p.collections {
			if c.took >= slow {
				kinds = append(kinds, fmt.Sprintf("%s %.1fs", c.resource, c.took.Seconds()))
			} else {
				fast++
			}
		}
		if fast > 0 {
			kinds = append(kinds, fmt.Sprintf("%d more under %.1fs", fast, slow.Seconds()))
		}
		if len(kinds) > 0 {
			s += ": " + strings.Join(kinds, ", ")
		}
		switch {
		case p.failed != "":
			s += "; failed: " + p.failed
		case p.wait > 0:
			s += fmt.Sprintf("; content remained, next look in %s at most", p.wait)
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// namespaceControllerSaid is where the namespace controller's passes over ns went (see
// describePasses), from kube-controller-manager's log.
func namespaceControllerSaid(ns string, deleted time.Time) string {
	data, err := os.ReadFile(filepath.Join(cluster.LogsDir(), "kube-controller-manager.log"))
	if err != nil {
		return err.Error()
	}
	return describePasses(namespacePasses(strings.Split(string(data), "\n"), ns, deleted.Year()), deleted, 500*time.Millisecond)
}

// slowestNamespace is the longest of a side's namespace deletions with where it went, or "".
func slowestNamespace(gone []time.Duration, where []string) string {
	if len(gone) == 0 || len(gone) != len(where) {
		return ""
	}
	i := slices.Index(gone, slices.Max(gone))
	return fmt.Sprintf("%.1fs: %s", gone[i].Seconds(), where[i])
}
