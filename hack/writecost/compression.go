package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchCompression measures what gzip costs kube-apiserver per watch event. Two ConfigMaps each
// have watchers informer-style watches open on them (watch-lists: sendInitialEvents, as client-go's
// informers open theirs since 1.35), one's by clients that accept gzip (client-go's default),
// the other's by clients that do not (DisableCompression, the operator's default since session
// 38). Writes to one then the other, in rounds of n in the order A B B A A B B A, are timed
// apart: the two modes share the server's drift. It prints one table row per mode.
func watchCompression(ctx context.Context, cfg *rest.Config, c client.Client, ns string, n, watchers, apiPid, etcdPid int) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	type mode struct {
		name, cm             string
		api, etcd, wall      time.Duration
		writes, nextAnnotate int
	}
	modes := []*mode{
		{name: "accepting gzip (client-go's default)", cm: "cm-gzip"},
		{name: "not accepting gzip (DisableCompression)", cm: "cm-plain"},
	}
	for _, m := range modes {
		if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.cm}}); err != nil {
			return err
		}
		wcfg := rest.CopyConfig(cfg)
		wcfg.DisableCompression = m.cm == "cm-plain"
		for range watchers {
			// A client of its own each (its own connection), as each controller process has.
			wc, err := client.NewWithWatch(rest.CopyConfig(wcfg), client.Options{Scheme: c.Scheme()})
			if err != nil {
				return err
			}
			w, err := wc.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns), &client.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("metadata.name", m.cm),
				Raw: &metav1.ListOptions{
					SendInitialEvents:    ptr(true),
					ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
					AllowWatchBookmarks:  true,
				}})
			if err != nil {
				return fmt.Errorf("watch-list %s: %w", m.name, err)
			}
			go func() {
				for range w.ResultChan() {
				}
			}()
		}
	}
	write := func(m *mode, count int) error {
		for range count {
			m.nextAnnotate++
			if err := annotate(ctx, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.cm}}, m.nextAnnotate); err != nil {
				return err
			}
		}
		return nil
	}
	for _, m := range modes { // warm up
		if err := write(m, 20); err != nil {
			return err
		}
	}
	for _, i := range []int{0, 1, 1, 0, 0, 1, 1, 0} {
		m := modes[i]
		time.Sleep(500 * time.Millisecond) // the round before's last events sent
		a0, e0, t0 := cpuOf(apiPid), cpuOf(etcdPid), time.Now()
		if err := write(m, n); err != nil {
			return err
		}
		m.wall += time.Since(t0)
		time.Sleep(500 * time.Millisecond) // this round's last events sent
		m.api += cpuOf(apiPid) - a0
		m.etcd += cpuOf(etcdPid) - e0
		m.writes += n
	}
	for _, m := range modes {
		fmt.Printf("| ConfigMap data (merge patch), %d watch-lists open on it %s | %.2f ms | %.2f ms | %.2f ms |\n",
			watchers, m.name, ms1(m.api)/float64(m.writes), ms1(m.etcd)/float64(m.writes), ms1(m.wall)/float64(m.writes))
	}
	return nil
}
