package cli

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// watchServings lists the servings of a namespace (all namespaces when ns is "", one serving when
// name is set, through the metadata.name field selector), hands each to fn, then watches and hands
// every change to fn until fn says stop, fn fails or ctx ends. A closed watch resumes from the
// last resourceVersion; an expired one lists again. It never polls.
func watchServings(ctx context.Context, c client.WithWatch, ns, name string,
	onList func([]v1.ModelServing) (bool, error), onEvent func(watch.EventType, *v1.ModelServing) (bool, error)) error {
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
			var list v1.ModelServingList
			if err := c.List(ctx, &list, opts...); err != nil {
				return err
			}
			if stop, err := onList(list.Items); stop || err != nil {
				return err
			}
			rv, relist = list.ResourceVersion, false
		}
		w, err := c.Watch(ctx, &v1.ModelServingList{}, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
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

func drain(ctx context.Context, w watch.Interface, rv *string, relist *bool, onEvent func(watch.EventType, *v1.ModelServing) (bool, error)) (bool, error) {
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
				if ms, ok := ev.Object.(*v1.ModelServing); ok {
					*rv = ms.ResourceVersion
				}
				continue
			}
			ms, ok := ev.Object.(*v1.ModelServing)
			if !ok {
				continue
			}
			*rv = ms.ResourceVersion
			if stop, err := onEvent(ev.Type, ms); stop || err != nil {
				return true, err
			}
		}
	}
}
