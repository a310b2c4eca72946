//! What one call reads: its input, its pre-call state (whole or layered),
//! the paths already resolved in them, and the input operators rendered
//! ahead of it — and [`Render`], what renders against that.

use crate::error::{CallError, Origin};
use crate::paths::dotted::{Path, Resolved};
use crate::state::view::StateView;
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};

/// Where a reference reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Input,
    State,
}

impl Source {
    /// `$input` or `$state`.
    pub(crate) fn operator(self) -> &'static str {
        match self {
            Source::Input => "$input",
            Source::State => "$state",
        }
    }

    /// What it reads, for messages: `input` or `pre-call state`.
    pub(crate) fn place(self) -> &'static str {
        match self {
            Source::Input => "input",
            Source::State => "pre-call state",
        }
    }

    /// Who supplied what it reads.
    pub(crate) fn origin(self) -> Origin {
        match self {
            Source::Input => Origin::Input,
            Source::State => Origin::State,
        }
    }
}

/// What renders to a value against one call (an expression, or a part
/// of a path that an expression gives).
pub(crate) trait Render: std::fmt::Debug + Send + Sync {
    /// Its value for this call.
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError>;

    /// A copy (compiled definitions are `Clone`).
    fn clone_render(&self) -> Box<dyn Render>;
}

impl Clone for Box<dyn Render> {
    fn clone(&self) -> Self {
        self.clone_render()
    }
}

/// How many distinct paths of one variant (read by its conditions and
/// references) are remembered per call; paths beyond that are resolved each
/// time they are read.
const PATH_MEMO: usize = 16;

/// The slot of a path that has none.
pub(crate) const NO_SLOT: usize = usize::MAX;

/// One call's remembered lookups, one slot per distinct source and path of
/// the variant (slots are assigned when the definition is compiled): `None`
/// not yet resolved, `Some(found)` resolved. The input and state do not change
/// during a call, so a path resolved once serves every condition and
/// reference that reads it.
///
/// It also keeps the values of the variant's named sub-expressions (version
/// 3's `let`) computed so far in this call, by slot: each is computed at
/// most once per call, on first use (no allocation until then).
///
/// And it counts the elements the call's iterations have visited so far
/// (version 3's work budget, [`WORK_BUDGET`]).
pub(crate) struct Memo<'a>(
    [Cell<Option<Option<&'a Value>>>; PATH_MEMO],
    RefCell<Vec<Option<Value>>>,
    Cell<u32>,
    RefCell<Vec<Option<&'a Value>>>,
);

impl<'a> Memo<'a> {
    pub(crate) fn new() -> Memo<'a> {
        Memo(
            [const { Cell::new(None) }; PATH_MEMO],
            RefCell::new(Vec::new()),
            Cell::new(0),
            RefCell::new(Vec::new()),
        )
    }
}

/// At most this many elements visited by one call's iterations
/// (docs/mock-language.md "The work budget").
pub(crate) const WORK_BUDGET: u32 = 100_000;

/// One call's input operators rendered ahead (by `crate::render::ahead`),
/// by input-hole id, as JSON text, as values, or both; `None` where there
/// is nothing ahead: the operator failed (its error is then met by
/// rendering it in place, with its own location), or it is a plain
/// reference among texts rendered without values, which costs no more to
/// write in place than to copy from here. A value is moved out, not copied,
/// by the first rendering that uses it; a second use of the same operator
/// renders it in place.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ahead {
    pub(crate) text: Vec<u8>,
    /// The range of each operator's text in `text`.
    pub(crate) spans: Vec<Option<(u32, u32)>>,
    pub(crate) values: Vec<RefCell<Option<Value>>>,
}

impl Ahead {
    /// The text rendered ahead for input hole `id`.
    pub(crate) fn text(&self, id: usize) -> Option<&[u8]> {
        let (start, end) = (*self.spans.get(id)?)?;
        self.text.get(start as usize..end as usize)
    }

    /// The value rendered ahead for input hole `id`, moved out.
    pub(crate) fn take_value(&self, id: usize) -> Option<Value> {
        self.values.get(id)?.take()
    }
}

/// What one call reads: the input, the pre-call state, and the memo of paths
/// already resolved in them.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub(crate) input: &'a Value,
    pub(crate) state: StateView<'a>,
    memo: &'a [Cell<Option<Option<&'a Value>>>],
    /// The values of the named sub-expressions computed so far, by slot.
    pub(crate) lets: &'a RefCell<Vec<Option<Value>>>,
    /// The input operators already rendered for this call, if any.
    pub(crate) ahead: Option<&'a Ahead>,
    /// The elements visited so far by this call's iterations.
    work: &'a Cell<u32>,
    /// The elements in sight that are read in place from the input or the
    /// state (an iteration over a referenced collection), by slot: no copy.
    pub(crate) borrowed: &'a RefCell<Vec<Option<&'a Value>>>,
}

impl<'a> Scope<'a> {
    pub(crate) fn new(input: &'a Value, state: &'a Map<String, Value>, memo: &'a Memo<'a>) -> Self {
        Scope {
            input,
            state: StateView::plain(state),
            memo: &memo.0,
            lets: &memo.1,
            ahead: None,
            work: &memo.2,
            borrowed: &memo.3,
        }
    }

    pub(crate) fn with_ahead(
        input: &'a Value,
        state: &'a Map<String, Value>,
        memo: &'a Memo<'a>,
        ahead: &'a Ahead,
    ) -> Self {
        Scope {
            input,
            state: StateView::plain(state),
            memo: &memo.0,
            lets: &memo.1,
            ahead: Some(ahead),
            work: &memo.2,
            borrowed: &memo.3,
        }
    }

    /// A scope over a layered state (a shared base and an attempt's overlay).
    pub(crate) fn layered(input: &'a Value, state: StateView<'a>, memo: &'a Memo<'a>) -> Self {
        Scope {
            input,
            state,
            memo: &memo.0,
            lets: &memo.1,
            ahead: None,
            work: &memo.2,
            borrowed: &memo.3,
        }
    }

    /// Counts `elements` more visits of the iteration at `at` against the
    /// call's work budget; past it, the call ends.
    pub(crate) fn visit(&self, elements: usize, at: &str) -> Result<(), CallError> {
        let spent = u32::try_from(elements)
            .ok()
            .and_then(|n| self.work.get().checked_add(n))
            .filter(|spent| *spent <= WORK_BUDGET);
        match spent {
            Some(spent) => {
                self.work.set(spent);
                Ok(())
            }
            None => Err(CallError::WorkBudgetExceeded {
                message: format!(
                    "the iteration at {} would take the call past its work budget of {WORK_BUDGET} elements visited",
                    crate::error::display_pointer(at)
                ),
            }),
        }
    }

    /// Puts `value` in sight in named-value slot `slot` (an iteration's
    /// element); the answer is what the slot held, to put back with
    /// [`Scope::unbind`].
    pub(crate) fn bind(&self, slot: usize, value: Value) -> Option<Value> {
        let mut lets = self.lets.borrow_mut();
        if lets.len() <= slot {
            lets.resize(slot + 1, None);
        }
        lets.get_mut(slot).and_then(|cell| cell.replace(value))
    }

    /// Puts `value`, read in place, in sight in slot `slot`; the answer is
    /// what the slot held, to put back the same way.
    pub(crate) fn bind_borrowed(&self, slot: usize, value: Option<&'a Value>) -> Option<&'a Value> {
        let mut bound = self.borrowed.borrow_mut();
        if bound.len() <= slot {
            bound.resize(slot + 1, None);
        }
        match bound.get_mut(slot) {
            Some(cell) => std::mem::replace(cell, value),
            None => None,
        }
    }

    /// The value in sight in slot `slot`: read in place, or held.
    pub(crate) fn with_bound<T>(&self, slot: usize, f: impl FnOnce(Option<&Value>) -> T) -> T {
        if let Some(Some(value)) = self.borrowed.borrow().get(slot) {
            return f(Some(value));
        }
        f(self.lets.borrow().get(slot).and_then(Option::as_ref))
    }

    /// Takes the value out of slot `slot` and puts `previous` back.
    pub(crate) fn unbind(&self, slot: usize, previous: Option<Value>) -> Option<Value> {
        let mut lets = self.lets.borrow_mut();
        let cell = lets.get_mut(slot)?;
        std::mem::replace(cell, previous)
    }

    /// The value at `path` of `source`, through the memo.
    pub(crate) fn lookup(&self, source: Source, path: &Path, slot: usize) -> Resolved<'a> {
        let memo = self.memo.get(slot);
        if let Some(found) = memo.and_then(Cell::get) {
            return found.map_or(Resolved::Missing, Resolved::Found);
        }
        let resolved = match source {
            Source::Input => path
                .resolve(self.input)
                .map_or(Resolved::Missing, Resolved::Found),
            Source::State => self.state.resolve(path.segments()),
        };
        let found = match resolved {
            // The whole state is not a borrowed value; it is not remembered.
            Resolved::Whole => return Resolved::Whole,
            Resolved::Built(v) => return Resolved::Built(v),
            Resolved::Found(v) => Some(v),
            Resolved::Missing => None,
        };
        if let Some(cell) = memo {
            cell.set(Some(found));
        }
        resolved
    }
}
