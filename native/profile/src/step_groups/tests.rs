use super::collect::*;
use super::*;
use crate::view::{LineView, PlaneView, Tag};
use std::collections::HashMap;

fn plane<'a>(index: usize, name: &str, strings: &'a [std::sync::Arc<str>]) -> PlaneView<'a> {
    PlaneView {
        index,
        name: name.into(),
        line_count: 1,
        meta: Default::default(),
        stats: HashMap::new(),
        programs: vec![],
        strings,
    }
}

/// The plane a line is read with, where its event names do not matter (steps do not come from the host).
fn any(strings: &[std::sync::Arc<str>]) -> PlaneView<'_> {
    plane(0, "", strings)
}

type Event<'a> = (f64, f64, &'a [(Tag, f64)]);

/// A line at `ts` ns of events (offset ps, duration ps, tags), tags grouped by event in event order.
fn line(ts: f64, events: &[Event]) -> LineView {
    let mut l = LineView { timestamp_ns: ts, count: events.len(), ..Default::default() };
    for (i, &(off, dur, tags)) in events.iter().enumerate() {
        l.offset_ps.push(off);
        l.duration_ps.push(dur);
        for &(kind, value) in tags {
            l.tag_event.push(i as i32);
            l.tag_kind.push(kind);
            l.tag_value.push(value);
        }
    }
    l.tag_count = l.tag_event.len();
    l
}

const US: f64 = 1e6; // ps

/// Two step annotations on one thread over three launches; a GPU's kernels of those launches, and one kernel
/// with an unknown correlation id (it takes the group before it).
fn two_steps() -> GroupPartial {
    let strings: Vec<std::sync::Arc<str>> = Vec::new();
    let mut c = GroupCollector::new();
    c.plane(&plane(0, "/host:CPU", &strings));
    c.line(
        &any(&strings),
        &line(
            1000.0,
            &[
                (0.0, 100.0 * US, &[(Tag::Root, 1.0)]),
                (10.0 * US, US, &[(Tag::Correlation, 1.0)]),
                (50.0 * US, US, &[(Tag::Correlation, 2.0)]),
                (200.0 * US, 100.0 * US, &[(Tag::Root, 1.0)]),
                (210.0 * US, US, &[(Tag::Correlation, 3.0)]),
            ],
        ),
    );
    // A line with no grouping stats is not read.
    c.line(&any(&strings), &line(0.0, &[(0.0, US, &[])]));
    c.plane(&plane(1, "/device:GPU:0", &strings));
    c.line(
        &any(&strings),
        &line(
            1000.0,
            &[
                (20.0 * US, 5.0 * US, &[(Tag::Correlation, 1.0)]),
                (60.0 * US, 4.0 * US, &[(Tag::Correlation, 2.0)]),
                // A graph's next kernel: same correlation id right after, one span.
                (65.0 * US, 5.0 * US, &[(Tag::Correlation, 2.0)]),
                (80.0 * US, 5.0 * US, &[(Tag::Correlation, 99.0)]),
                (220.0 * US, 30.0 * US, &[(Tag::Correlation, 3.0)]),
            ],
        ),
    );
    c.partial()
}

#[test]
fn collects_nodes_launches_and_spans() {
    let p = two_steps();
    assert!(!p.grouped);
    assert_eq!(p.node_start, vec![1.0, 201.0]);
    assert_eq!(p.root_level, vec![1.0, 1.0]);
    assert_eq!(p.parent, vec![-1, -1]);
    assert!(p.producer_type.iter().all(|x| x.is_nan()) && p.consumer_id.len() == 2);
    assert_eq!(p.launch_corr, vec![1.0, 2.0, 3.0]);
    assert_eq!(p.launch_node, vec![0, 0, 1]);
    assert_eq!(p.dev_plane, vec![1, 1, 1, 1]);
    assert_eq!(p.dev_start, vec![21.0, 61.0, 81.0, 221.0]);
    assert_eq!(p.dev_end, vec![26.0, 71.0, 86.0, 251.0]);
    assert_eq!(p.dev_corr, vec![1.0, 2.0, 99.0, 3.0]);
}

#[test]
fn steps_by_root_annotations() {
    let p = two_steps();
    let busy = [21.0, 26.0, 61.0, 71.0, 81.0, 86.0, 221.0, 251.0];
    let s = group_steps(&[&p], &busy).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].index, s[0].start_us, s[0].total_us, s[0].execute_us, s[0].other_us), (1, 21.0, 65.0, 20.0, 45.0));
    assert_eq!((s[1].index, s[1].start_us, s[1].total_us, s[1].execute_us, s[1].other_us), (2, 221.0, 30.0, 30.0, 0.0));
    // The same partial split in two (host, then device) joins to the same steps.
    let host = GroupPartial { dev_plane: vec![], dev_start: vec![], dev_end: vec![], dev_corr: vec![], ..p.clone() };
    let dev = GroupPartial {
        dev_plane: p.dev_plane.clone(),
        dev_start: p.dev_start.clone(),
        dev_end: p.dev_end.clone(),
        dev_corr: p.dev_corr.clone(),
        ..Default::default()
    };
    assert_eq!(group_steps(&[&host, &dev], &busy).unwrap(), s);
}

#[test]
fn nested_and_higher_roots() {
    let strings: Vec<std::sync::Arc<str>> = Vec::new();
    let mut c = GroupCollector::new();
    c.plane(&plane(0, "/host:CPU", &strings));
    c.line(
        &any(&strings),
        &line(
            0.0,
            &[
                // A level-1 root with a level-1 root in it (grouped by the outer one) and a launch in that.
                (0.0, 100.0 * US, &[(Tag::Root, 1.0)]),
                (10.0 * US, 50.0 * US, &[(Tag::Root, 1.0)]),
                (20.0 * US, US, &[(Tag::Correlation, 1.0)]),
                // A level-2 root later (taken first: its group is 0) over a launch.
                (200.0 * US, 10.0 * US, &[(Tag::Root, 2.0)]),
                (201.0 * US, US, &[(Tag::Correlation, 2.0)]),
            ],
        ),
    );
    c.plane(&plane(1, "/device:GPU:0", &strings));
    c.line(
        &any(&strings),
        &line(
            0.0,
            &[(30.0 * US, 10.0 * US, &[(Tag::Correlation, 1.0)]), (205.0 * US, 2.0 * US, &[(Tag::Correlation, 2.0)])],
        ),
    );
    let p = c.partial();
    assert_eq!(p.parent, vec![-1, 0, -1]);
    assert_eq!(p.launch_node, vec![1, 2]);
    assert_eq!(node_groups(&[&p]), vec![1, 1, 0]);
    let s = group_steps(&[&p], &[]).unwrap();
    // Steps by group id: the level-2 root's first.
    assert_eq!(s.iter().map(|x| (x.start_us, x.total_us)).collect::<Vec<_>>(), vec![(205.0, 2.0), (30.0, 10.0)]);
}

#[test]
fn producer_consumer_context() {
    let strings: Vec<std::sync::Arc<str>> = Vec::new();
    let mut c = GroupCollector::new();
    c.plane(&plane(0, "/host:CPU", &strings));
    // Thread 1: a root with a producer in it.
    c.line(
        &any(&strings),
        &line(
            0.0,
            &[
                (0.0, 100.0 * US, &[(Tag::Root, 1.0)]),
                (10.0 * US, 10.0 * US, &[(Tag::ProducerType, 5.0), (Tag::ProducerId, 0.0)]),
            ],
        ),
    );
    // Thread 2: its consumer (id -0: the same context as 0), over a launch; an async event over another launch is
    // nobody's child, so that launch has no group.
    c.line(
        &any(&strings),
        &line(
            0.0,
            &[
                (300.0 * US, 100.0 * US, &[(Tag::ConsumerType, 5.0), (Tag::ConsumerId, -0.0)]),
                (310.0 * US, US, &[(Tag::Correlation, 9.0)]),
                (320.0 * US, 5.0 * US, &[(Tag::Async, 1.0), (Tag::Correlation, 10.0)]),
            ],
        ),
    );
    // Thread 3: a consumer and producer of other contexts, no launch: kept (it can pass a group on).
    c.line(
        &any(&strings),
        &line(
            0.0,
            &[(
                500.0 * US,
                US,
                &[(Tag::ConsumerType, 6.0), (Tag::ConsumerId, 1.0), (Tag::ProducerType, 7.0), (Tag::ProducerId, 1.0)],
            )],
        ),
    );
    // Thread 4: only a consumer: not kept.
    c.line(&any(&strings), &line(0.0, &[(600.0 * US, US, &[(Tag::ConsumerType, 6.0), (Tag::ConsumerId, 1.0)])]));
    c.plane(&plane(1, "/device:GPU:0", &strings));
    c.line(
        &any(&strings),
        &line(
            0.0,
            &[
                (320.0 * US, 10.0 * US, &[(Tag::Correlation, 9.0)]),
                (400.0 * US, 10.0 * US, &[(Tag::Correlation, 10.0)]),
            ],
        ),
    );
    let p = c.partial();
    assert_eq!(p.node_start, vec![0.0, 10.0, 300.0, 500.0]);
    assert_eq!(p.parent, vec![-1, 0, -1, -1]);
    assert_eq!(p.launch_corr, vec![9.0, 10.0]);
    assert_eq!(p.launch_node, vec![2, -1]);
    assert_eq!(node_groups(&[&p]), vec![0, 0, 0, -1]);
    // The async launch's kernel has no group and takes the one before it on its device.
    let s = group_steps(&[&p], &[325.0, 335.0]).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].start_us, s[0].total_us, s[0].execute_us, s[0].other_us), (320.0, 90.0, 10.0, 80.0));
}

#[test]
fn grouped_capture_or_no_root_gives_none() {
    let mut p = two_steps();
    assert!(group_steps(&[&p], &[]).is_some());
    let strings: Vec<std::sync::Arc<str>> = Vec::new();
    let mut c = GroupCollector::new();
    c.plane(&plane(3, "/device:GPU:1", &strings));
    c.line(&any(&strings), &line(0.0, &[(0.0, US, &[(Tag::GroupId, 4.0)])]));
    let g = c.partial();
    assert!(g.grouped && g.dev_corr.is_empty());
    assert_eq!(group_steps(&[&p, &g], &[]), None);
    p.root_level = vec![0.0, 0.0];
    assert_eq!(group_steps(&[&p], &[]), None);
    assert_eq!(group_steps(&[], &[]), None);
}

#[test]
fn host_planes_that_launch_nothing_and_tpu_captures_keep_nothing() {
    let strings: Vec<std::sync::Arc<str>> = Vec::new();
    let mut c = GroupCollector::new();
    c.plane(&plane(0, "/host:CPU", &strings));
    c.line(&any(&strings), &line(0.0, &[(0.0, US, &[(Tag::Root, 1.0)])]));
    c.plane(&plane(1, "/device:TPU:0", &strings));
    c.plane(&plane(2, "/host:CPU", &strings));
    c.line(&any(&strings), &line(0.0, &[(0.0, US, &[(Tag::Root, 1.0)]), (0.0, US, &[(Tag::Correlation, 1.0)])]));
    let p = c.partial();
    assert!(p.node_start.is_empty() && p.launch_corr.is_empty());
    assert_eq!(group_steps(&[&p], &[]), None);
}

#[test]
fn unsorted_host_events_are_ordered_by_start_then_longest() {
    let strings: Vec<std::sync::Arc<str>> = Vec::new();
    let mut c = GroupCollector::new();
    c.plane(&plane(0, "/host:CPU", &strings));
    // The launch comes first on the line but starts with the root and is shorter: the root is above it.
    c.line(&any(&strings), &line(0.0, &[(0.0, US, &[(Tag::Correlation, 1.0)]), (0.0, 9.0 * US, &[(Tag::Root, 3.0)])]));
    let p = c.partial();
    assert_eq!(p.launch_node, vec![0]);
    assert_eq!(p.root_level, vec![3.0]);
}

#[test]
fn the_last_launch_of_a_correlation_id_groups_its_device_events() {
    let groups = CorrGroups::new(vec![3.0, 1.0, 3.0, 7.0, 0.0, 3e12], vec![0, 1, 2, -1, 4, 5]);
    let cases = [(3.0, 2), (1.0, 1), (7.0, -1), (0.0, 4), (-0.0, 4), (3e12, 5), (2.0, -1), (1.5, -1), (f64::NAN, -1)];
    for (c, want) in cases {
        assert_eq!(groups.get(c), want, "{c}");
    }
}

#[test]
fn sorted_order_is_stable_and_sorts_only_when_needed() {
    let keys: [f64; 8] = [5.0, 4.0, 3.0, 2.0, 1.0, 0.0, 2.0, 2.0];
    let o = sorted_order(keys.len(), |a, b| keys[a as usize].total_cmp(&keys[b as usize]));
    assert_eq!(o, vec![5, 4, 3, 6, 7, 2, 1, 0]);
    assert_eq!(sorted_order(3, |_, _| std::cmp::Ordering::Equal), vec![0, 1, 2]);
}

/// A host node: root level, parent, producer (type, id), consumer (type, id).
type Node = (f64, i32, (f64, f64), (f64, f64));

/// Host nodes of one partial.
fn nodes(list: &[Node]) -> GroupPartial {
    let mut p = GroupPartial::default();
    for (k, &(root, parent, (pt, pi), (ct, ci))) in list.iter().enumerate() {
        p.node_start.push(k as f64);
        p.root_level.push(root);
        p.parent.push(parent);
        p.producer_type.push(pt);
        p.producer_id.push(pi);
        p.consumer_type.push(ct);
        p.consumer_id.push(ci);
    }
    p
}

#[test]
fn crowded_contexts_are_not_connected() {
    const NO: (f64, f64) = (f64::NAN, f64::NAN);
    for (crowd, linked) in [(62, true), (63, false)] {
        // A root producing context (1, 1), `crowd` more producers of it, and 64 consumers: 64 on both sides is
        // too crowded.
        let mut list = vec![(1.0, -1, (1.0, 1.0), NO)];
        list.extend((0..crowd).map(|_| (0.0, -1, (1.0, 1.0), NO)));
        list.extend((0..64).map(|_| (0.0, -1, NO, (1.0, 1.0))));
        let g = node_groups(&[&nodes(&list)]);
        assert_eq!(g[list.len() - 1] == 0, linked, "{crowd}");
        assert_eq!(g[0], 0);
    }
    // Across partials: node numbers continue, and a context's producer in one reaches its consumer in another.
    let a = nodes(&[(1.0, -1, NO, NO), (0.0, 0, (2.0, 3.0), NO)]);
    let b = nodes(&[(0.0, -1, NO, (2.0, 3.0)), (0.0, 0, NO, NO), (0.0, -1, NO, NO)]);
    assert_eq!(node_groups(&[&a, &b]), vec![0, 0, 0, 0, -1]);
}
