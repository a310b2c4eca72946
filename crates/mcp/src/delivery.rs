//! Whether a `tools/call`'s answer reached the caller (docs/reliability.md,
//! "An answer not delivered is a harness error").
//!
//! A call runs to its end in a task of its own (`ToolServer::call`), so
//! that it commits its evidence or records its fault whatever happens to
//! the request that carried it. Its answer can still be lost after that:
//! the HTTP client hung up or the request timed out (rmcp then cancels the
//! request's token), or, over stdio, the answer could not be written (the
//! client closed its end) or was never written (the session ended first).
//! Such a call is recorded as the harness error `answer_lost`
//! (`Dispatcher::record_lost_answer`), before the call lets its attempt end,
//! so that the attempt cannot pass on evidence the agent never saw.
//!
//! A [`Receipt`] follows one call's answer: the call hands it what to record
//! if the answer is lost ([`Receipt::answered`]), and the transport settles
//! it ([`Receipt::settle`]) once it knows whether the answer was written.
//! Over HTTP the call settles its own receipt when it hands the answer
//! over; over stdio [`Delivering`] settles it when the write returns, and
//! settles every receipt still open as lost when the session closes.

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, GetExtensions, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

/// What records one call's lost answer.
pub(crate) type Recorder = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

enum State {
    /// The call is running.
    Running,
    /// The call has ended; its answer is on its way.
    Answered(Recorder),
    /// The transport gave up before the call ended: the call records its
    /// lost answer when it ends.
    Lost,
    /// Delivered, or recorded as lost.
    Settled,
}

/// One call's answer, until it is delivered or recorded as lost.
pub(crate) struct Receipt {
    state: Mutex<State>,
}

impl Default for Receipt {
    fn default() -> Self {
        Self {
            state: Mutex::new(State::Running),
        }
    }
}

impl Receipt {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The call has ended: `lost` records its answer as lost if it is. When
    /// the transport has already given up, it is recorded now.
    pub(crate) async fn answered(&self, lost: Recorder) {
        let now = {
            let mut state = self.state();
            match std::mem::replace(&mut *state, State::Settled) {
                State::Running => {
                    *state = State::Answered(lost);
                    None
                }
                State::Lost => Some(lost),
                other @ (State::Answered(_) | State::Settled) => {
                    *state = other;
                    None
                }
            }
        };
        if let Some(record) = now {
            record().await;
        }
    }

    /// Whether the answer was `delivered`; when it was not, it is recorded
    /// as lost (now, or by the call when it ends).
    pub(crate) async fn settle(&self, delivered: bool) {
        let now = {
            let mut state = self.state();
            match std::mem::replace(&mut *state, State::Settled) {
                State::Answered(record) if !delivered => Some(record),
                State::Running if !delivered => {
                    *state = State::Lost;
                    None
                }
                // Delivered (its recorder dropped), already lost, or settled.
                State::Lost => {
                    *state = State::Lost;
                    None
                }
                _ => None,
            }
        };
        if let Some(record) = now {
            record().await;
        }
    }
}

type Pending = Arc<Mutex<HashMap<RequestId, Arc<Receipt>>>>;

/// A server transport that knows which `tools/call` answers it wrote: each
/// incoming `tools/call` gets a [`Receipt`] (in its request's extensions,
/// where [`ToolServer`](crate::ToolServer) finds it), settled when its
/// answer's write returns; on close, every receipt still open is lost.
pub(crate) struct Delivering<T> {
    inner: T,
    pending: Pending,
}

impl<T> Delivering<T> {
    pub(crate) fn new(inner: T) -> Self {
        Self {
            inner,
            pending: Arc::default(),
        }
    }
}

fn take(pending: &Pending, id: &RequestId) -> Option<Arc<Receipt>> {
    pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(id)
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Delivering<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let receipt = match &item {
            JsonRpcMessage::Response(response) => take(&self.pending, &response.id),
            JsonRpcMessage::Error(error) => {
                error.id.as_ref().and_then(|id| take(&self.pending, id))
            }
            _ => None,
        };
        let sent = self.inner.send(item);
        async move {
            let result = sent.await;
            if let Some(receipt) = receipt {
                receipt.settle(result.is_ok()).await;
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut message = self.inner.receive().await?;
        if let JsonRpcMessage::Request(request) = &mut message
            && matches!(request.request, ClientRequest::CallToolRequest(_))
        {
            let receipt = Arc::new(Receipt::default());
            request.request.extensions_mut().insert(receipt.clone());
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(request.id.clone(), receipt);
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let closed = self.inner.close().await;
        let open: Vec<Arc<Receipt>> = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, receipt)| receipt)
            .collect();
        for receipt in open {
            receipt.settle(false).await;
        }
        closed
    }
}
