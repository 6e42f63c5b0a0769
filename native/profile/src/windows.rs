//! Steps of device windows: the busy time inside each window is execute, the rest idle.

use crate::output::types::StepBreakdown;

/// Steps of device windows (flat [start0, end0, ...], µs): the busy time inside each is execute, the rest idle.
/// `busy` is flat merged intervals too; a trailing unpaired value of either is ignored.
pub fn window_steps(windows: &[f64], busy: &[f64]) -> Vec<StepBreakdown> {
    let mut steps = Vec::with_capacity(windows.len() / 2);
    let mut k = 0;
    while k + 1 < windows.len() {
        let ws = windows[k];
        let we = windows[k + 1];
        let mut execute_us = 0.0;
        let mut j = 0;
        while j + 1 < busy.len() {
            let a = f64::max(ws, busy[j]);
            let b = f64::min(we, busy[j + 1]);
            if b > a {
                execute_us += b - a;
            }
            j += 2;
        }
        steps.push(StepBreakdown {
            index: steps.len() + 1,
            start_us: ws,
            total_us: we - ws,
            compile_us: 0.0,
            execute_us,
            transfer_us: 0.0,
            host_us: 0.0,
            other_us: f64::max(0.0, we - ws - execute_us),
        });
        k += 2;
    }
    steps
}

/// Leaves out the first and the last of more than 5 step windows (flat [start0, end0, ...]), as xprof does outside
/// TPU (step_events_to_steps_db.cc: the steps at a capture's ends are likely cut by its start and stop).
pub fn drop_incomplete(windows: &mut Vec<f64>) {
    if windows.len() / 2 > 5 {
        windows.drain(..2);
        windows.truncate(windows.len() - 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_last_of_more_than_five_left_out() {
        let mut five: Vec<f64> = (0..10).map(f64::from).collect();
        drop_incomplete(&mut five);
        assert_eq!(five.len(), 10);
        let mut six: Vec<f64> = (0..12).map(f64::from).collect();
        drop_incomplete(&mut six);
        assert_eq!(six, (2..10).map(f64::from).collect::<Vec<_>>());
    }

    #[test]
    fn busy_time_inside_each_window() {
        // Windows [0,10] and [10,30]; busy [2,4], [8,12], [25,40].
        let s = window_steps(&[0.0, 10.0, 10.0, 30.0], &[2.0, 4.0, 8.0, 12.0, 25.0, 40.0]);
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].index, s[0].start_us, s[0].total_us, s[0].execute_us, s[0].other_us),
            (1, 0.0, 10.0, 4.0, 6.0)
        );
        assert_eq!(
            (s[1].index, s[1].start_us, s[1].total_us, s[1].execute_us, s[1].other_us),
            (2, 10.0, 20.0, 7.0, 13.0)
        );
        assert_eq!((s[1].compile_us, s[1].transfer_us, s[1].host_us), (0.0, 0.0, 0.0));
    }

    #[test]
    fn odd_lengths_and_empty() {
        assert!(window_steps(&[], &[1.0, 2.0]).is_empty());
        // The unpaired trailing window start and busy start are ignored.
        let s = window_steps(&[0.0, 5.0, 7.0], &[1.0, 2.0, 3.0]);
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].execute_us, s[0].other_us), (1.0, 4.0));
    }

    #[test]
    fn other_never_negative() {
        // A window that ends before it starts: total < 0, other clamped to 0.
        let s = window_steps(&[5.0, 3.0], &[]);
        assert_eq!((s[0].total_us, s[0].other_us), (-2.0, 0.0));
    }
}
