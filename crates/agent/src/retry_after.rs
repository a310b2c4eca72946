//! A bound on `Retry-After`: an endpoint that asks toolmock to come back
//! later than one request may take (the model time-out) is unavailable now,
//! never waited for. Without it an endpoint answering 429 with
//! `Retry-After: 3600` held an attempt `running` for hours (and a worker's
//! heartbeat kept renewing its lease).
//!
//! The layer sits under async-openai's retry layer: it turns such an answer
//! (429 or 5xx) into an error that layer does not retry, which
//! `classify` reads as [`ModelError::Unavailable`](toolmock_simulation::ModelError).

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// An endpoint's `Retry-After` is longer than toolmock waits.
#[derive(Debug, thiserror::Error)]
#[error(
    "the endpoint answered HTTP {status} and asked to retry after {} s, longer than the model time-out ({} s): unavailable",
    wait.as_secs(),
    bound.as_secs()
)]
pub(crate) struct RetryAfterTooLong {
    status: u16,
    wait: Duration,
    bound: Duration,
}

/// The tower service of the bound, over the HTTP service `S`.
#[derive(Debug, Clone)]
pub(crate) struct BoundedRetryAfter<S> {
    inner: S,
    bound: Duration,
}

impl<S> BoundedRetryAfter<S> {
    /// `inner`, whose answers asking for a wait longer than `bound` are errors.
    pub(crate) fn new(inner: S, bound: Duration) -> Self {
        Self { inner, bound }
    }
}

/// The wait an answer asks for, read as async-openai's retry layer reads
/// it (whole seconds; another form is not waited for).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

type Answer = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl<S> tower::Service<HttpRequestFactory> for BoundedRetryAfter<S>
where
    S: tower::Service<HttpRequestFactory, Response = reqwest::Response, Error = OpenAIError>,
    S::Future: Send + 'static,
{
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Answer;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: HttpRequestFactory) -> Self::Future {
        let bound = self.bound;
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await?;
            let status = response.status();
            if (status.as_u16() == 429 || status.is_server_error())
                && let Some(wait) = retry_after(response.headers())
                && wait > bound
            {
                return Err(OpenAIError::Boxed(Box::new(RetryAfterTooLong {
                    status: status.as_u16(),
                    wait,
                    bound,
                })));
            }
            Ok(response)
        })
    }
}

/// Whether `error` is an answer whose `Retry-After` was too long.
pub(crate) fn is_too_long(error: &OpenAIError) -> bool {
    matches!(error, OpenAIError::Boxed(e) if e.is::<RetryAfterTooLong>())
}
