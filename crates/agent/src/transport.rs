//! The HTTP path under async-openai's client, and what its failures say.
//!
//! The endpoint is not ours: whatever it answers — an error body, a model
//! name it echoes, a secret — must never reach an attempt's results or
//! evidence. So a final answer that is not a 2xx is turned into its status
//! alone ([`Status`]) before async-openai reads its body, and every
//! [`ModelError`] this crate makes describes the failure (the status class,
//! what was missing, the size), never the body.

use async_openai::error::{OpenAIError, WrappedError};
use async_openai::middleware::HttpRequestFactory;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use toolmock_simulation::ModelError;

/// The endpoint's answer was longer than the limit: it was not read on.
#[derive(Debug, thiserror::Error)]
#[error("the answer exceeded the {0}-byte limit")]
pub(crate) struct TooLarge(pub(crate) u64);

/// reqwest under async-openai, reading every answer body — a completion, an
/// error, a 429's — up to `limit` bytes and no further: a longer answer
/// (announced by its length or streamed in chunks without end) is
/// [`TooLarge`] as soon as it passes the limit, so no answer can exhaust
/// the process's memory. The body read is bounded in time by the client's
/// own time-out too.
#[derive(Debug, Clone)]
pub(crate) struct Capped {
    pub(crate) client: reqwest::Client,
    pub(crate) limit: u64,
}

impl tower::Service<HttpRequestFactory> for Capped {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), OpenAIError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let (client, limit) = (self.client.clone(), self.limit);
        Box::pin(async move {
            let too_large = || OpenAIError::Boxed(Box::new(TooLarge(limit)));
            let request = factory.build().await?;
            let mut response = client
                .execute(request)
                .await
                .map_err(OpenAIError::Reqwest)?;
            if response.content_length().is_some_and(|n| n > limit) {
                return Err(too_large());
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(OpenAIError::Reqwest)? {
                if u64::try_from(body.len() + chunk.len()).map_or(true, |n| n > limit) {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            let mut headers = response.headers().clone();
            // async-openai's retry layer retries a 429 only when its body is
            // an OpenAI error object, and reports any other (a proxy's page,
            // plain text) as an answer that is not a completion. What a 429
            // says is never used, only its status and `Retry-After`: such a
            // body is replaced by a neutral error, so the 429 is retried as
            // any other.
            if response.status() == reqwest::StatusCode::TOO_MANY_REQUESTS
                && serde_json::from_slice::<WrappedError>(&body).is_err()
            {
                body = br#"{"error": {"message": "rate limited"}}"#.to_vec();
                headers.remove(reqwest::header::CONTENT_LENGTH);
            }
            let mut rebuilt = http::Response::new(body);
            *rebuilt.status_mut() = response.status();
            *rebuilt.version_mut() = response.version();
            *rebuilt.headers_mut() = headers;
            Ok(reqwest::Response::from(rebuilt))
        })
    }
}

/// The endpoint's final answer (after the retry layer) had a status other
/// than 2xx. Holds the number only: never the reason phrase or the body.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {0}")]
pub(crate) struct Status(pub(crate) u16);

/// The type of [`refuse_non_success`] as the service stack holds it.
pub(crate) type Refusal =
    fn(Result<reqwest::Response, OpenAIError>) -> Result<reqwest::Response, OpenAIError>;

/// Turns a final non-2xx answer into [`Status`], so its body is never read
/// into an error (async-openai would keep its message).
pub(crate) fn refuse_non_success(
    result: Result<reqwest::Response, OpenAIError>,
) -> Result<reqwest::Response, OpenAIError> {
    match result {
        Ok(response) if !response.status().is_success() => Err(OpenAIError::Boxed(Box::new(
            Status(response.status().as_u16()),
        ))),
        other => other,
    }
}

/// What a status means, in words (never the endpoint's reason phrase).
fn status_class(status: u16) -> &'static str {
    match status {
        429 => "rate limited",
        300..=399 => "a redirect, which is not followed",
        400..=499 => "the request was refused",
        500..=599 => "a server error",
        _ => "not a success",
    }
}

/// A final non-2xx answer: 429 and 5xx are the endpoint's unavailability,
/// any other status an unusable answer.
fn from_status(status: u16) -> ModelError {
    let said = format!(
        "the endpoint answered HTTP {status} ({})",
        status_class(status)
    );
    if status == 429 || (500..=599).contains(&status) {
        ModelError::Unavailable(said)
    } else {
        ModelError::Failed(said)
    }
}

/// Whether an error is transient (worth another request), and its class
/// with a message that holds nothing the endpoint sent.
pub(crate) fn classify(error: &OpenAIError, timeout: Duration) -> (bool, ModelError) {
    match error {
        OpenAIError::Boxed(boxed) if boxed.is::<TooLarge>() => {
            let limit_bytes = boxed.downcast_ref::<TooLarge>().map_or(0, |t| t.0);
            (false, ModelError::TooLarge { limit_bytes })
        }
        OpenAIError::Boxed(boxed) => match boxed.downcast_ref::<Status>() {
            Some(&Status(status)) => (false, from_status(status)),
            // A `Retry-After` longer than the model time-out: unavailable now.
            None if crate::retry_after::is_too_long(error) => {
                (false, ModelError::Unavailable(boxed.to_string()))
            }
            None => (
                false,
                ModelError::Failed("the endpoint's answer could not be read".into()),
            ),
        },
        // Not made while `refuse_non_success` runs first; by status alone.
        OpenAIError::ApiError(api) => (false, from_status(api.status_code.as_u16())),
        // The retry layer already retried connection errors; time-outs are
        // retried by the caller.
        OpenAIError::Reqwest(e) if e.is_timeout() => (
            true,
            ModelError::Unavailable(format!(
                "the endpoint did not answer within {} s",
                timeout.as_secs_f64()
            )),
        ),
        OpenAIError::Reqwest(e) if e.is_connect() => (
            false,
            ModelError::Unavailable("the endpoint could not be reached (connection failed)".into()),
        ),
        OpenAIError::Reqwest(e) if e.is_request() => (
            false,
            ModelError::Unavailable("the request could not be sent to the endpoint".into()),
        ),
        OpenAIError::Reqwest(_) => (
            false,
            ModelError::Failed("the endpoint's answer could not be read to its end".into()),
        ),
        // serde_json's message may quote the answer: only where it broke.
        OpenAIError::JSONDeserialize(e, content) => (
            false,
            ModelError::Failed(format!(
                "the endpoint's answer ({} bytes) is not a chat completion (line {}, column {})",
                content.len(),
                e.line(),
                e.column()
            )),
        ),
        _ => (
            false,
            ModelError::Failed("the endpoint's answer could not be used".into()),
        ),
    }
}
