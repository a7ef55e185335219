//! Configurations grown from a base one along one dimension at a time, for measuring how the
//! state space grows (`cdr growth`, docs/performance.md's growth table).

use crate::config::{ModelConfig, Upstream};
use serde::{Deserialize, Serialize};

/// One dimension a configuration grows along.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dimension {
    /// One more channel per step: copies of the base's channels in turn (the first, the
    /// second, ..., the first again).
    Channels,
    /// One more recovered buffer on every channel per step.
    Recovered,
    /// One more data buffer from every channel's upstream per step, written before the
    /// channel's late elements (so the same elements stay late).
    Live,
    /// One more checkpoint per step.
    Checkpoints,
}

impl Dimension {
    /// Every dimension, in the order the growth table lists them.
    pub const ALL: [Dimension; 4] = [
        Dimension::Channels,
        Dimension::Recovered,
        Dimension::Live,
        Dimension::Checkpoints,
    ];

    /// The name on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Channels => "channels",
            Dimension::Recovered => "recovered",
            Dimension::Live => "live",
            Dimension::Checkpoints => "checkpoints",
        }
    }

    /// The dimension called `name`.
    pub fn from_name(name: &str) -> Option<Dimension> {
        Dimension::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// `base` grown `step` times along `d` (step 0 is `base` itself), validated: an error when the
/// grown configuration is past a bound the model supports (`ModelConfig::validate`) or when
/// `base` cannot grow along `d` validly.
pub fn grow(base: &ModelConfig, d: Dimension, step: u32) -> Result<ModelConfig, String> {
    let mut cfg = base.clone();
    let by = u8::try_from(step).map_err(|_| format!("step {step} is too large"))?;
    match d {
        Dimension::Channels => {
            let n = base.channels.len();
            for i in 0..usize::from(by) {
                let copy = base.channels[i % n].clone();
                cfg.channels.push(copy);
            }
        }
        Dimension::Recovered => {
            for c in &mut cfg.channels {
                c.recovered = c.recovered.checked_add(by).ok_or("too many recovered buffers")?;
            }
        }
        Dimension::Live => {
            for c in &mut cfg.channels {
                let at = c.upstream.len() - usize::from(c.late);
                c.upstream
                    .splice(at..at, std::iter::repeat_n(Upstream::Data, usize::from(by)));
            }
        }
        Dimension::Checkpoints => {
            cfg.checkpoints = cfg.checkpoints.checked_add(by).ok_or("too many checkpoints")?;
        }
    }
    cfg.validate().map_err(|e| format!("{} step {step}: {e}", d.name()))?;
    Ok(cfg)
}

/// What step `step` along `d` has, in a few words: "3 channels", "2 recovered per channel".
pub fn describe(base: &ModelConfig, d: Dimension, step: u32) -> String {
    let Ok(cfg) = grow(base, d, step) else {
        return format!("{} +{step}", d.name());
    };
    let per_channel = |f: &dyn Fn(&crate::config::ChannelConfig) -> usize| {
        let counts: Vec<usize> = cfg.channels.iter().map(f).collect();
        if counts.windows(2).all(|w| w[0] == w[1]) {
            counts[0].to_string()
        } else {
            counts.iter().map(usize::to_string).collect::<Vec<_>>().join("/")
        }
    };
    match d {
        Dimension::Channels => format!("{} channels", cfg.channels.len()),
        Dimension::Recovered => format!("{} recovered per channel", per_channel(&|c| usize::from(c.recovered))),
        Dimension::Live => format!(
            "{} data per upstream",
            per_channel(&|c| c.upstream.iter().filter(|u| **u == Upstream::Data).count())
        ),
        Dimension::Checkpoints if cfg.checkpoints == 1 => "1 checkpoint".to_string(),
        Dimension::Checkpoints => format!("{} checkpoints", cfg.checkpoints),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ChannelKind;
    use crate::presets::preset;

    #[test]
    fn step_zero_is_the_base() {
        let base = preset("tiny").unwrap();
        for d in Dimension::ALL {
            assert_eq!(grow(&base, d, 0).unwrap(), base);
        }
    }

    #[test]
    fn tiny_grows_validly_until_the_model_s_bounds() {
        let base = preset("tiny").unwrap();
        // The bounds of ModelConfig::validate: 4 channels, 8 recovered and 8 upstream elements
        // per channel, 4 checkpoints.
        for (d, last) in [
            (Dimension::Channels, 2),
            (Dimension::Recovered, 7),
            (Dimension::Live, 6),
            (Dimension::Checkpoints, 3),
        ] {
            for step in 0..=last {
                grow(&base, d, step).unwrap_or_else(|e| panic!("{e}"));
            }
            let err = grow(&base, d, last + 1).unwrap_err();
            assert!(err.starts_with(d.name()), "{err}");
        }
    }

    #[test]
    fn each_dimension_grows_what_it_says() {
        let base = preset("tiny").unwrap();
        let c = grow(&base, Dimension::Channels, 2).unwrap();
        let kinds: Vec<ChannelKind> = c.channels.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [
                ChannelKind::Local,
                ChannelKind::Remote,
                ChannelKind::Local,
                ChannelKind::Remote
            ]
        );
        assert_eq!(c.channels[2], base.channels[0]);
        let r = grow(&base, Dimension::Recovered, 2).unwrap();
        assert!(
            r.channels
                .iter()
                .zip(&base.channels)
                .all(|(g, b)| g.recovered == b.recovered + 2)
        );
        let l = grow(&base, Dimension::Live, 1).unwrap();
        assert!(
            l.channels
                .iter()
                .zip(&base.channels)
                .all(|(g, b)| g.upstream.len() == b.upstream.len() + 1 && g.upstream.last() == Some(&Upstream::Data))
        );
        assert_eq!(
            grow(&base, Dimension::Checkpoints, 3).unwrap().checkpoints,
            base.checkpoints + 3
        );
        assert_eq!(describe(&base, Dimension::Channels, 1), "3 channels");
        assert_eq!(describe(&base, Dimension::Recovered, 1), "2 recovered per channel");
        assert_eq!(describe(&base, Dimension::Live, 1), "2 data per upstream");
        assert_eq!(describe(&base, Dimension::Checkpoints, 0), "1 checkpoint");
        assert_eq!(describe(&base, Dimension::Checkpoints, 1), "2 checkpoints");
    }

    #[test]
    fn live_elements_go_before_the_late_ones() {
        let base = preset("late").unwrap();
        let g = grow(&base, Dimension::Live, 1).unwrap();
        let c = &g.channels[0];
        assert_eq!(c.late, base.channels[0].late);
        let tail = &c.upstream[c.upstream.len() - usize::from(c.late)..];
        let base_c = &base.channels[0];
        assert_eq!(
            tail,
            &base_c.upstream[base_c.upstream.len() - usize::from(base_c.late)..]
        );
    }

    #[test]
    fn names_round_trip() {
        for d in Dimension::ALL {
            assert_eq!(Dimension::from_name(d.name()), Some(d));
        }
        assert_eq!(Dimension::from_name("bogus"), None);
    }
}
