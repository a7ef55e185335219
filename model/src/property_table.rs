//! The table both models declare their properties with: one row per property, giving its
//! key, expectation, name and predicate.

/// The stateright property of expectation `e` named `name` with predicate `f`.
pub fn property<M: stateright::Model>(
    e: stateright::Expectation,
    name: &'static str,
    f: fn(&M, &M::State) -> bool,
) -> stateright::Property<M> {
    match e {
        stateright::Expectation::Always => stateright::Property::always(name, f),
        stateright::Expectation::Eventually => stateright::Property::eventually(name, f),
        stateright::Expectation::Sometimes => stateright::Property::sometimes(name, f),
    }
}

/// Declares a property key enum from one table, so a property's name, expectation and
/// predicate are written once: `properties! { #[doc] pub enum Key for Model, State; table }`,
/// each row `Id: Always|Eventually|Sometimes, "name", predicate;`. Both models use it: the
/// channel model's [`PropertyId`] and the task level's
/// [`crate::task_level::properties::TaskPropertyId`].
macro_rules! properties {
    (
        $(#[$meta:meta])*
        pub enum $key:ident for $model:ty, $state:ty;
        $($id:ident: $expectation:ident, $name:literal, $pred:path;)*
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $key {
            $(#[doc = $name] $id,)*
        }

        impl $key {
            /// Every property, in report order.
            pub const ALL: &[$key] = &[$($key::$id),*];

            /// The name reports, JSON, JUnit and the docs use.
            pub fn name(self) -> &'static str {
                match self {
                    $($key::$id => $name,)*
                }
            }

            /// `always` (safety), `eventually` (liveness) or `sometimes` (reachability).
            pub fn expectation(self) -> ::stateright::Expectation {
                match self {
                    $($key::$id => ::stateright::Expectation::$expectation,)*
                }
            }

            /// The predicate on one state.
            pub fn predicate(self) -> fn(&$model, &$state) -> bool {
                match self {
                    $($key::$id => $pred,)*
                }
            }

            /// The property named `name` (as [`Self::name`] spells it).
            pub fn from_name(name: &str) -> Option<$key> {
                $key::ALL.iter().copied().find(|p| p.name() == name)
            }

            /// Every property with expectation `e`.
            pub fn with_expectation(e: ::stateright::Expectation) -> impl Iterator<Item = $key> {
                $key::ALL.iter().copied().filter(move |p| p.expectation() == e)
            }

            /// The stateright property of a model that wraps this one, as the Explorer's does.
            pub fn property_of<W>(self) -> ::stateright::Property<W>
            where
                W: ::stateright::Model<State = $state> + AsRef<$model>,
            {
                match self {
                    $($key::$id => $crate::property_table::property(
                        self.expectation(),
                        $name,
                        |w: &W, s: &$state| $pred(w.as_ref(), s),
                    ),)*
                }
            }

            /// The stateright property.
            pub fn property(self) -> ::stateright::Property<$model> {
                $crate::property_table::property(self.expectation(), self.name(), self.predicate())
            }
        }

        impl ::std::fmt::Display for $key {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        // In JSON a property is its name, not its key.
        impl ::serde::Serialize for $key {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    };
}
pub(crate) use properties;
