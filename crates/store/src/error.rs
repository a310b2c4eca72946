//! The schema's own SQLSTATEs, and mapping database errors to the
//! runtime's [`StoreError`].

use toolmock_runtime::error::StoreError;

/// A SQLSTATE raised by the schema's own triggers (listed in the
/// `toolmock-store` section of `docs/error-codes.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SqlState {
    /// `TM001`: a row of an append-only table would be updated, deleted or truncated.
    AppendOnly,
    /// `TM002`: a revision number is not the operation's latest + 1.
    RevisionGap,
    /// `TM010`: a finished attempt's status, outcome or finish time would
    /// change (only a later harness error may turn its outcome into
    /// `harness_error`).
    FinalAttempt,
    /// `TM011`: a finished attempt's state row would be written, or its
    /// conversation, evidence, tool input errors or model usage added to (a
    /// harness error may still be recorded).
    SealedAttempt,
    /// `TM012`: a capability's revocation would be cleared or moved, or the
    /// capability moved to another attempt, tenant or token.
    FinalRevocation,
    /// `TM013`: a state row's copies of its attempt's status and lease
    /// epoch would be written other than as the attempt's own.
    ForgedAttemptCopy,
}

impl SqlState {
    /// Every SQLSTATE of the schema.
    pub const ALL: &'static [SqlState] = &[
        SqlState::AppendOnly,
        SqlState::RevisionGap,
        SqlState::FinalAttempt,
        SqlState::SealedAttempt,
        SqlState::FinalRevocation,
        SqlState::ForgedAttemptCopy,
    ];

    /// The five-character SQLSTATE.
    pub fn as_str(self) -> &'static str {
        match self {
            SqlState::AppendOnly => "TM001",
            SqlState::RevisionGap => "TM002",
            SqlState::FinalAttempt => "TM010",
            SqlState::SealedAttempt => "TM011",
            SqlState::FinalRevocation => "TM012",
            SqlState::ForgedAttemptCopy => "TM013",
        }
    }

    /// Reads a SQLSTATE; `None` for one the schema does not raise.
    pub fn parse(code: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.as_str() == code)
    }
}

/// Maps a sqlx error: `TM001` → `AppendOnly`, unique violations →
/// `Conflict`, foreign-key violations and missing rows → `NotFound`, bad
/// stored data → `Corrupt`, everything else → `Backend`.
pub fn map_sqlx_error(error: sqlx::Error) -> StoreError {
    if let Some(db) = error.as_database_error() {
        let code = db.code();
        match (code.as_deref().and_then(SqlState::parse), code.as_deref()) {
            (Some(SqlState::AppendOnly), _) => {
                return StoreError::AppendOnly {
                    table: db.table().unwrap_or_default().to_owned(),
                    message: db.message().to_owned(),
                };
            }
            (Some(SqlState::RevisionGap), _) | (_, Some("23505")) => {
                return StoreError::Conflict {
                    what: db
                        .constraint()
                        .map(str::to_owned)
                        .unwrap_or_else(|| db.message().to_owned()),
                };
            }
            (_, Some("23503")) => {
                return StoreError::NotFound {
                    entity: "referenced row",
                };
            }
            _ => {}
        }
    }
    match error {
        sqlx::Error::RowNotFound => StoreError::NotFound { entity: "row" },
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => StoreError::Corrupt {
            what: "column",
            message: error.to_string(),
        },
        other => StoreError::Backend(Box::new(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::SqlState;
    use std::collections::BTreeSet;

    /// Every `ERRCODE = 'TMnnn'` the migrations raise.
    fn raised_by_migrations() -> BTreeSet<String> {
        crate::MIGRATOR
            .iter()
            .flat_map(|m| {
                m.sql
                    .as_str()
                    .split("ERRCODE = '")
                    .skip(1)
                    .map(|rest| rest.chars().take_while(|c| *c != '\'').collect::<String>())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn sqlstates_match_the_documentation_and_the_migrations() {
        let doc = include_str!("../../../docs/error-codes.md");
        let ours: Vec<(&str, &str)> = SqlState::ALL
            .iter()
            .map(|s| (s.as_str(), "sqlstate"))
            .collect();
        toolmock_contract::check_documented_classes(doc, "toolmock-store", &ours)
            .unwrap_or_else(|e| panic!("{e}"));
        let codes: BTreeSet<String> = ours.iter().map(|(code, _)| (*code).to_owned()).collect();
        assert_eq!(codes, raised_by_migrations(), "ERRCODEs of the migrations");
    }
}
