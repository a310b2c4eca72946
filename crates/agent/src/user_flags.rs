//! The flags that name the model playing simulated users (each with an
//! environment fallback). Without them the user model is the agent's:
//! same endpoint, same model name, same key.

/// The user model's endpoint flags, flattened into [`crate::ModelFlags`].
#[derive(Debug, Clone, Default, clap::Args)]
pub struct UserModelFlags {
    /// The endpoint that plays cases' simulated users (default: --model-url).
    #[arg(long, value_name = "URL", env = "TOOLMOCK_USER_MODEL_URL")]
    pub user_model_url: Option<String>,
    /// The user model's name (default: --model, with the agent's endpoint).
    #[arg(long, value_name = "NAME", env = "TOOLMOCK_USER_MODEL")]
    pub user_model: Option<String>,
    /// The user model endpoint's API key (default: --model-api-key; never printed).
    #[arg(
        long,
        value_name = "KEY",
        env = "TOOLMOCK_USER_MODEL_API_KEY",
        hide_env_values = true
    )]
    pub user_model_api_key: Option<String>,
}

/// Where the user model is, once the flags are read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum UserEndpoint<'a> {
    /// The agent's own model plays the users.
    Agent,
    /// Its own endpoint: URL, model name, key.
    Own(&'a str, &'a str, Option<&'a String>),
}

impl UserModelFlags {
    /// The user model's endpoint, given the agent's URL and key; `Err` is a
    /// flag without its partner.
    pub(crate) fn endpoint<'a>(
        &'a self,
        model_url: Option<&'a String>,
        model_api_key: Option<&'a String>,
    ) -> Result<UserEndpoint<'a>, crate::FlagsError> {
        let key = self.user_model_api_key.as_ref().or(model_api_key);
        match (&self.user_model, self.user_model_url.as_ref().or(model_url)) {
            (Some(name), Some(url)) => Ok(UserEndpoint::Own(url, name, key)),
            (Some(_), None) => Err(crate::FlagsError::UserModelWithoutUrl),
            (None, _) if self.user_model_url.is_some() => {
                Err(crate::FlagsError::UserModelUrlWithoutModel)
            }
            (None, _) => Ok(UserEndpoint::Agent),
        }
    }
}

impl UserModelFlags {
    /// The user model alone, where no agent model is played (`toolmock
    /// serve`: its MCP client is the agent): `--user-model-url` and
    /// `--user-model` both, or neither (none configured); requests with the
    /// model defaults (120 s time-out, 4 retries, 8 in flight, 16 MiB answers).
    pub fn standalone(
        &self,
    ) -> Result<Option<std::sync::Arc<dyn toolmock_simulation::ChatModel>>, crate::FlagsError> {
        let UserEndpoint::Own(url, name, key) = self.endpoint(None, None)? else {
            return Ok(None);
        };
        let endpoint = crate::Endpoint {
            base_url: url.to_owned(),
            model: name.to_owned(),
            api_key: key.cloned(),
            temperature: None,
            seed: None,
            timeout: std::time::Duration::from_secs(120),
            max_retries: 4,
            concurrency: 8,
            max_response_bytes: crate::DEFAULT_MAX_RESPONSE_BYTES,
        };
        Ok(Some(std::sync::Arc::new(crate::OpenAiChat::new(
            &endpoint,
        )?)))
    }
}
