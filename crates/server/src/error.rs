//! The service's error: a stable code, a message, the violations of a refused record, and the
//! class that HTTP turns into a status and MCP into a tool error.

use serde::Serialize;

/// What kind of failure an error is; each interface maps it to its own signal (an HTTP status,
/// an MCP tool error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The request is malformed or breaks a rule (400/422).
    BadRequest,
    /// The body breaks a schema rule (422).
    Invalid,
    /// No or an unknown key (401).
    Unauthenticated,
    /// The principal lacks a role (403).
    Forbidden,
    /// Nothing of that id is visible to the principal (404).
    NotFound,
    /// The body is larger than the limit (413).
    TooLarge,
    /// The route exists but not with this method (405).
    MethodNotAllowed,
    /// The body's content type is not one the route reads (415).
    UnsupportedMediaType,
    /// The service cannot answer now (503): the store is busy with another process's write,
    /// a scale-out server did not answer, or the request ran past its deadline. Retrying later
    /// may succeed.
    Unavailable,
    /// The service failed (500).
    Internal,
}

/// One broken rule of a refused record or request field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema, utoipa::ToSchema)]
pub struct ViolationDto {
    /// JSON path of the offending field, e.g. `$.entities[2].role`.
    pub path: String,
    /// The offending value, rendered and truncated; absent when the field is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Stable code of the rule, e.g. `envelope.required_field`.
    pub rule: String,
    /// What the rule demands.
    pub message: String,
}

impl From<&ctxgraph::Violation> for ViolationDto {
    fn from(v: &ctxgraph::Violation) -> Self {
        ViolationDto {
            path: v.path.clone(),
            value: v.value.clone(),
            rule: v.rule.to_owned(),
            message: v.message.clone(),
        }
    }
}

/// A failed service operation.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ServiceError {
    /// Stable machine code, e.g. `access.forbidden`, `envelope.required_field`.
    pub code: String,
    /// What went wrong, naming the value and the rule.
    pub message: String,
    /// Every broken rule, for a refused record.
    pub violations: Vec<ViolationDto>,
    /// How interfaces signal it.
    pub class: ErrorClass,
}

impl ServiceError {
    /// An error of `class` with no violations.
    pub fn new(class: ErrorClass, code: &str, message: impl Into<String>) -> Self {
        ServiceError {
            code: code.to_owned(),
            message: message.into(),
            violations: Vec::new(),
            class,
        }
    }

    /// A malformed or out-of-range request field.
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorClass::BadRequest, code, message)
    }

    /// Nothing of that id is visible.
    pub fn not_found(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorClass::NotFound, code, message)
    }

    /// The service failed.
    pub fn internal(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Internal, code, message)
    }

    /// The service cannot answer now; retrying later may succeed.
    pub fn unavailable(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Unavailable, code, message)
    }

    /// The principal lacks the role an operation needs.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Forbidden, "access.forbidden", message)
    }
}

impl From<ctxgraph::Error> for ServiceError {
    fn from(e: ctxgraph::Error) -> Self {
        let code = e.code();
        let class = match (&e, code) {
            (_, "access.unknown_key") => ErrorClass::Unauthenticated,
            (_, "access.forbidden" | "access.owner_only") => ErrorClass::Forbidden,
            (_, "store.busy") => ErrorClass::Unavailable,
            // A scale-out server that did not answer: retrying later may succeed.
            #[cfg(feature = "net")]
            (ctxgraph::Error::Store(ctxgraph_store::StoreError::Remote { .. }), _) => {
                ErrorClass::Unavailable
            }
            (ctxgraph::Error::Limit { .. }, _) => ErrorClass::TooLarge,
            (ctxgraph::Error::Validation(_), _) => ErrorClass::Invalid,
            _ if e.is_user_error() => ErrorClass::BadRequest,
            _ => ErrorClass::Internal,
        };
        let violations = if let ctxgraph::Error::Validation(v) = &e {
            v.violations.iter().map(ViolationDto::from).collect()
        } else {
            Vec::new()
        };
        ServiceError { code: code.to_owned(), message: e.to_string(), violations, class }
    }
}

/// The JSON body of every error response and MCP tool error: `{"error": {...}}`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// Code, message and violations of an error.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// Stable machine code, e.g. `access.forbidden`.
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// Every broken rule of a refused record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<ViolationDto>,
}

impl From<&ServiceError> for ErrorBody {
    fn from(e: &ServiceError) -> Self {
        ErrorBody {
            error: ErrorDetail {
                code: e.code.clone(),
                message: e.message.clone(),
                violations: e.violations.clone(),
            },
        }
    }
}
