//! The run view's timeline: every event of every line, in start order, as four columns (start and duration in
//! µs, a name id, the nesting depth). The analysis hands each line's columns to a sink as soon as the line is
//! done, so the columns are never held twice: the WebAssembly build's sink copies them straight out to its host.

use crate::view::PlaneView;

/// Above this many events a capture's timeline is not kept (the run view could not draw it anyway): the op
/// table, steps and overview still count every event, and the Chrome trace export has them all.
pub const TIMELINE_MAX_EVENTS: usize = 4_000_000;

/// Where the timeline's lines go.
pub trait TimelineSink {
    /// One line's events in start order: start (µs, absolute: the summary gives the capture's first event),
    /// duration (µs), name id (into the summary's timeline names), nesting depth.
    fn line(&mut self, plane: &str, name: &str, start: &[f64], dur: &[f64], name_id: &[i32], depth: &[u8]);
    /// The capture has more events than the timeline keeps: the lines handed over so far are not wanted.
    fn drop_all(&mut self);
}

/// Collects each line's columns and the names they refer to.
pub struct TimelineCollector<'s> {
    sink: &'s mut dyn TimelineSink,
    names: Vec<String>,
    /// Name id by string key (-1: not seen yet); keys are the decoder's, the same for every plane of a file.
    id_of_key: Vec<i32>,
    /// The id of '?', a metadata id the plane does not name.
    unknown: i32,
    start: Vec<f64>,
    dur: Vec<f64>,
    name_id: Vec<i32>,
    depth: Vec<u8>,
}

impl<'s> TimelineCollector<'s> {
    pub fn new(sink: &'s mut dyn TimelineSink) -> Self {
        TimelineCollector {
            sink,
            names: vec![],
            id_of_key: vec![],
            unknown: -1,
            start: vec![],
            dur: vec![],
            name_id: vec![],
            depth: vec![],
        }
    }

    pub fn begin_line(&mut self, n: usize) {
        for v in [&mut self.start, &mut self.dur] {
            v.clear();
            v.reserve(n);
        }
        self.name_id.clear();
        self.depth.clear();
    }

    pub fn event(&mut self, p: &PlaneView, meta_id: i64, start_us: f64, dur_us: f64, depth: u8) {
        let id = match p.meta.get(&meta_id) {
            Some(info) if info.key >= 0 => {
                let key = info.key as usize;
                if key >= self.id_of_key.len() {
                    self.id_of_key.resize(key + 1, -1);
                }
                if self.id_of_key[key] < 0 {
                    self.id_of_key[key] = self.names.len() as i32;
                    self.names.push(info.name.to_string());
                }
                self.id_of_key[key]
            }
            _ => {
                if self.unknown < 0 {
                    self.unknown = self.names.len() as i32;
                    self.names.push("?".into());
                }
                self.unknown
            }
        };
        self.start.push(start_us);
        self.dur.push(dur_us);
        self.name_id.push(id);
        self.depth.push(depth);
    }

    #[inline(never)] // kept small: lib.rs, "Function size"
    pub fn end_line(&mut self, plane: &str, name: &str) {
        self.sink.line(plane, name, &self.start, &self.dur, &self.name_id, &self.depth);
    }

    /// Past the limit: the sink drops what it has, and no more is collected.
    pub fn drop_all(self) {
        self.sink.drop_all();
    }

    pub fn names(self) -> Vec<String> {
        self.names
    }
}

/// A sink that keeps the lines whole (tests).
#[cfg(test)]
pub(crate) mod kept {
    use super::TimelineSink;

    #[derive(Default, Debug, PartialEq)]
    pub struct KeptLines {
        pub lines: Vec<KeptLine>,
        pub dropped: bool,
    }

    #[derive(Default, Debug, PartialEq)]
    pub struct KeptLine {
        pub plane: String,
        pub name: String,
        pub start: Vec<f64>,
        pub dur: Vec<f64>,
        pub name_id: Vec<i32>,
        pub depth: Vec<u8>,
    }

    impl TimelineSink for KeptLines {
        fn line(&mut self, plane: &str, name: &str, start: &[f64], dur: &[f64], name_id: &[i32], depth: &[u8]) {
            self.lines.push(KeptLine {
                plane: plane.into(),
                name: name.into(),
                start: start.into(),
                dur: dur.into(),
                name_id: name_id.into(),
                depth: depth.into(),
            });
        }
        fn drop_all(&mut self) {
            self.lines.clear();
            self.dropped = true;
        }
    }
}
