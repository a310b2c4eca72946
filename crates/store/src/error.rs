//! Mapping database errors to the runtime's [`StoreError`].

use toolmock_runtime::error::StoreError;

/// The SQLSTATE the append-only triggers raise.
pub const APPEND_ONLY_SQLSTATE: &str = "TM001";

/// The SQLSTATE the dense-revision trigger raises.
pub const REVISION_GAP_SQLSTATE: &str = "TM002";

/// Maps a sqlx error: `TM001` → `AppendOnly`, unique violations →
/// `Conflict`, foreign-key violations and missing rows → `NotFound`, bad
/// stored data → `Corrupt`, everything else → `Backend`.
pub fn map_sqlx_error(error: sqlx::Error) -> StoreError {
    if let Some(db) = error.as_database_error() {
        match db.code().as_deref() {
            Some(APPEND_ONLY_SQLSTATE) => {
                return StoreError::AppendOnly {
                    table: db.table().unwrap_or_default().to_owned(),
                    message: db.message().to_owned(),
                };
            }
            Some("23505") | Some(REVISION_GAP_SQLSTATE) => {
                return StoreError::Conflict {
                    what: db
                        .constraint()
                        .map(str::to_owned)
                        .unwrap_or_else(|| db.message().to_owned()),
                };
            }
            Some("23503") => {
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
