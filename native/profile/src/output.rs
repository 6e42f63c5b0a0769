//! What the analysis hands out, declared once: the run view's records (types.rs, with their TypeScript), the
//! sentences both the run view and `tpw profile` show (notes.rs), and the JSON they are written as (json.rs).

pub mod json;
pub mod notes;
pub mod types;
