package cli

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchServings lists the servings of a namespace (all namespaces when ns is "", one serving when
// name is set, through the metadata.name field selector), hands each to fn, then watches and hands
// every change to fn until fn says stop, fn fails or ctx ends. A closed watch resumes from the
// last resourceVersion; an expired one lists again. It never polls.
//
// Each object is decoded on its own (through unstructured lists and watches): a serving that does
// not fit the Go type reaches fn as a bad item, never as an error that ends the watch for all.
func watchServings(ctx context.Context, c client.WithWatch, ns, name string,
	onList func([]servingItem) (bool, error), onEvent func(watch.EventType, servingItem) (bool, error)) error {
	opts := []client.ListOption{}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if name != "" {
		opts = append(opts, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
	}
	relist := true
	rv := ""
	for {
		if relist {
			items, listRV, err := listServings(ctx, c, opts...)
			if err != nil {
				return err
			}
			if stop, err := onList(items); stop || err != nil {
				return err
			}
			rv, relist = listRV, false
		}
		w, err := c.Watch(ctx, newServingList(), append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				relist = true
				continue
			}
			return err
		}
		stop, err := drain(ctx, w, &rv, &relist, onEvent)
		w.Stop()
		if stop || err != nil {
			return err
		}
	}
}

func drain(ctx context.Context, w watch.Interface, rv *string, relist *bool, onEvent func(watch.EventType, servingItem) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil // resume from rv
			}
			switch ev.Type {
			case watch.Error:
				if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
					*relist = true
					return false, nil
				}
				return true, fmt.Errorf("watch: %v", apierrors.FromObject(ev.Object))
			case watch.Bookmark:
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					*rv = u.GetResourceVersion()
				}
				continue
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			*rv = u.GetResourceVersion()
			if stop, err := onEvent(ev.Type, decodeServing(u)); stop || err != nil {
				return true, err
			}
		}
	}
}
