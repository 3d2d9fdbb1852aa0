//! The published JSON Schemas (draft 2020-12) of every message, generated from the Rust types.
//!
//! The generated files are committed under `libs/protocol/schemas/`: one per message type
//! (`game.command.json`, …) plus `client-message.json` and `server-message.json`, which are
//! self-contained `oneOf`s of all messages of one direction. Each has the id
//! `urn:juegoland:protocol:<name>:1`. A test fails when the committed files are stale; run
//! `UPDATE_SCHEMAS=1 cargo test -p juegoland-protocol` to regenerate them.
//!
//! The schemas describe structure. The decoder enforces what JSON Schema cannot express
//! (duplicate keys, byte size, nesting depth) and is the authority for the server.

use std::borrow::Cow;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};

use crate::messages::{
    Ack, ClientMessage, CommandEnvelope, CommandStatusRequest, CommandUnknown, Cursor, ErrorMessage, MessageType,
    PROTOCOL_VERSION, ServerMessage, Snapshot, SyncRequest, UnsubscribeRequest,
};

/// One generated schema file.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaFile {
    /// The file name under `schemas/`, e.g. `game.command.json`.
    pub file_name: String,
    /// The schema's `$id`, e.g. `urn:juegoland:protocol:game.command:1`.
    pub id: String,
    /// The schema document, `$id` included.
    pub schema: Value,
}

impl SchemaFile {
    fn generate<T: JsonSchema>(name: &str) -> Self {
        Self::with_id::<T>(name, schema_id(name))
    }

    /// The schema of `T` as file `<name>.json` with the given `$id`: how other contracts
    /// (the packages' manifests, locks and plans) publish their schemas the same way.
    pub fn with_id<T: JsonSchema>(name: &str, id: String) -> Self {
        let mut schema = SchemaGenerator::default().into_root_schema_for::<T>().to_value();
        if let Value::Object(object) = &mut schema {
            object.insert("$id".to_owned(), Value::String(id.clone()));
        }
        Self { file_name: format!("{name}.json"), id, schema }
    }

    /// The file's text: pretty-printed with keys sorted, so that the output does not depend
    /// on whether some other crate turned on `serde_json/preserve_order`.
    pub fn render(&self) -> String {
        let mut text = serde_json::to_string_pretty(&sorted(&self.schema)).expect("a schema always serializes");
        text.push('\n');
        text
    }
}

/// The id of a published schema: `urn:juegoland:protocol:<name>:1`.
pub fn schema_id(name: &str) -> String {
    format!("urn:juegoland:protocol:{name}:{PROTOCOL_VERSION}")
}

/// Every published schema: one per message type, then the two direction unions.
pub fn schema_files() -> Vec<SchemaFile> {
    vec![
        message_file::<SyncRequest>(),
        message_file::<CommandEnvelope>(),
        message_file::<CommandStatusRequest>(),
        message_file::<UnsubscribeRequest>(),
        message_file::<Snapshot>(),
        message_file::<Ack>(),
        message_file::<CommandUnknown>(),
        message_file::<Cursor>(),
        message_file::<ErrorMessage>(),
        SchemaFile::generate::<ClientMessage>("client-message"),
        SchemaFile::generate::<ServerMessage>("server-message"),
    ]
}

fn message_file<T: MessageType + JsonSchema>() -> SchemaFile {
    SchemaFile::generate::<Envelope<T>>(T::TYPE)
}

/// The schema of a whole message: the body's schema with `protocolVersion` and `type` added
/// in front. The body schema forbids additional properties, so the two envelope fields must
/// be merged into it rather than combined with `allOf`.
struct Envelope<T>(PhantomData<T>);

impl<T: MessageType + JsonSchema> JsonSchema for Envelope<T> {
    fn schema_name() -> Cow<'static, str> {
        T::TYPE.into()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("juegoland_protocol::{}", T::TYPE).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = T::json_schema(generator);
        let object = schema.ensure_object();
        let mut properties = Map::new();
        properties.insert("protocolVersion".to_owned(), json!({"type": "integer", "const": PROTOCOL_VERSION}));
        properties.insert("type".to_owned(), json!({"type": "string", "const": T::TYPE}));
        if let Some(Value::Object(body)) = object.remove("properties") {
            properties.extend(body);
        }
        object.insert("properties".to_owned(), Value::Object(properties));
        let mut required = vec![json!("protocolVersion"), json!("type")];
        if let Some(Value::Array(body)) = object.remove("required") {
            required.extend(body);
        }
        object.insert("required".to_owned(), Value::Array(required));
        schema
    }
}

impl JsonSchema for ClientMessage {
    fn schema_name() -> Cow<'static, str> {
        "ClientMessage".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "juegoland_protocol::ClientMessage".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A message a client sends (protocol version 1).",
            "oneOf": [
                generator.subschema_for::<Envelope<SyncRequest>>(),
                generator.subschema_for::<Envelope<CommandEnvelope>>(),
                generator.subschema_for::<Envelope<CommandStatusRequest>>(),
                generator.subschema_for::<Envelope<UnsubscribeRequest>>(),
            ],
        })
    }
}

impl JsonSchema for ServerMessage {
    fn schema_name() -> Cow<'static, str> {
        "ServerMessage".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "juegoland_protocol::ServerMessage".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A message the server sends (protocol version 1).",
            "oneOf": [
                generator.subschema_for::<Envelope<Snapshot>>(),
                generator.subschema_for::<Envelope<Ack>>(),
                generator.subschema_for::<Envelope<CommandUnknown>>(),
                generator.subschema_for::<Envelope<Cursor>>(),
                generator.subschema_for::<Envelope<ErrorMessage>>(),
            ],
        })
    }
}

/// A copy of `value` whose objects list their keys in sorted order.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&object[k.as_str()]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
