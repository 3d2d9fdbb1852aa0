//! Rules outputs checked against their schemas as JSON text, without a `serde_json::Value`
//! tree ([`OutputSchema`]).
//!
//! A rules module's view, context and data come from typed Rust values, serialized once into
//! the text that is stored and sent. The engine checks that text against the schema generated
//! from the same type while reading it once with serde_json's streaming deserializer: a
//! `DeserializeSeed` walks the compiled schema beside the input and allocates nothing for
//! the keywords schemars emits for plain data — `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `prefixItems`, `minItems`/`maxItems`,
//! `minLength`/`maxLength`, numeric bounds, `enum`/`const` of strings, `$ref`, an `anyOf`
//! or `oneOf` whose branches take different JSON types (an `Option` of a struct), and one over
//! objects told apart by a required property with a string `const` (a tagged enum: serde
//! writes the tag first, so the tag picks the branch before the rest is read; an object whose
//! first key is not the tag is checked by the fallback). Any other
//! keyword (`pattern`, `uniqueItems`, …) makes its
//! subschema a *fallback*: that part of the input is read into a `Value` and checked by the
//! `jsonschema` crate, compiled for that subschema alone (with the root's `$defs`). So the
//! verdict is always `jsonschema`'s; the property test `check` compares the two on random
//! input. Hand-rolled because no crate validates JSON Schema from a stream (see
//! docs/decisions.md).

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize as _;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// JSON types as a bit set. `NUMBER` is the non-integral part: "number" is `INTEGER | NUMBER`.
const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const INTEGER: u8 = 4;
const NUMBER: u8 = 8;
const STRING: u8 = 16;
const ARRAY: u8 = 32;
const OBJECT: u8 = 64;
const ANY: u8 = 127;

/// A compiled output schema.
pub struct OutputSchema {
    nodes: Vec<Node>,
    fallbacks: Vec<jsonschema::Validator>,
}

type NodeId = usize;

enum Node {
    /// `true` or `{}` (annotations only).
    Any,
    /// `false`.
    Never,
    /// Checked by `jsonschema` on a `Value` of this part of the input.
    Fallback(usize),
    /// A `$ref`: the node it names.
    Ref(NodeId),
    Native(Box<Native>),
}

#[derive(Default)]
struct Native {
    types: u8,
    /// `enum` / `const` of strings and `null` (`None` stands for `null`).
    one_of_values: Option<Vec<Option<String>>>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    min_length: Option<usize>,
    max_length: Option<usize>,
    prefix_items: Vec<NodeId>,
    items: Option<NodeId>,
    min_items: Option<usize>,
    max_items: Option<usize>,
    properties: BTreeMap<String, NodeId>,
    required: Vec<String>,
    additional: Option<NodeId>,
    /// An `anyOf` / `oneOf` whose branches take disjoint JSON types: the branch for a type.
    by_type: Vec<(u8, NodeId)>,
    /// An `anyOf` / `oneOf` over objects told apart by a tag.
    by_tag: Option<ByTag>,
}

/// The branches of a tagged enum: every branch an object that requires the property `key`
/// with a string `const` of its own.
struct ByTag {
    key: String,
    branches: Vec<(String, NodeId)>,
    /// The fallback for the whole choice, for an object whose first key is not the tag.
    whole: usize,
}

/// Keywords that assert nothing.
const ANNOTATIONS: [&str; 10] = [
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// The `format`s schemars emits for Rust numbers: unknown to JSON Schema, so never asserted.
const NUMBER_FORMATS: [&str; 14] = [
    "uint8", "uint16", "uint32", "uint64", "uint128", "uint", "int8", "int16", "int32", "int64", "int128", "int",
    "float", "double",
];

impl OutputSchema {
    /// Compiles `schema` (a 2020-12 schema with its definitions under `$defs`).
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let mut c = Compiler { root: schema, nodes: Vec::new(), fallbacks: Vec::new(), defs: BTreeMap::new() };
        c.node(schema)?;
        Ok(Self { nodes: c.nodes, fallbacks: c.fallbacks })
    }

    /// Checks one JSON text; the error says what failed (for logs, never for clients).
    pub fn check(&self, text: &str) -> Result<(), String> {
        let mut de = serde_json::Deserializer::from_str(text);
        Seed { schema: self, node: 0 }.deserialize(&mut de).map_err(|e| e.to_string())?;
        de.end().map_err(|e| e.to_string())
    }

    /// The node a value of JSON type `t` is checked against, through `$ref`s and by-type
    /// branches; `None` when no branch takes that type.
    fn resolve(&self, mut id: NodeId, t: u8) -> Option<&Node> {
        loop {
            match &self.nodes[id] {
                Node::Ref(to) => id = *to,
                Node::Native(n) if !n.by_type.is_empty() => {
                    id = n.by_type.iter().find(|(types, _)| types & t != 0)?.1;
                }
                node => return Some(node),
            }
        }
    }
}

struct Compiler<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    fallbacks: Vec<jsonschema::Validator>,
    /// `$ref` targets compiled so far (recursive types refer to themselves).
    defs: BTreeMap<String, NodeId>,
}

impl Compiler<'_> {
    /// Compiles `schema` into a new node and returns its id.
    fn node(&mut self, schema: &Value) -> Result<NodeId, String> {
        let id = self.nodes.len();
        self.nodes.push(Node::Any);
        let node = match schema {
            Value::Bool(true) => Node::Any,
            Value::Bool(false) => Node::Never,
            Value::Object(map) => match self.native(map)? {
                Some(node) => node,
                None => self.fallback(schema)?,
            },
            _ => return Err("a schema is an object or a boolean".into()),
        };
        self.nodes[id] = node;
        Ok(id)
    }

    fn fallback(&mut self, schema: &Value) -> Result<Node, String> {
        let mut whole = schema.clone();
        if let (Value::Object(map), Some(defs)) = (&mut whole, self.root.get("$defs")) {
            map.insert("$defs".into(), defs.clone());
        }
        let validator = jsonschema::validator_for(&whole).map_err(|e| e.to_string())?;
        self.fallbacks.push(validator);
        Ok(Node::Fallback(self.fallbacks.len() - 1))
    }

    /// The native form of an object schema, or `None` when a keyword needs the fallback.
    fn native(&mut self, map: &Map<String, Value>) -> Result<Option<Node>, String> {
        let asserting: Vec<(&str, &Value)> = map
            .iter()
            .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()) && k.as_str() != "$defs")
            .filter(|(k, v)| !(k.as_str() == "format" && v.as_str().is_some_and(|f| NUMBER_FORMATS.contains(&f))))
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        if asserting.is_empty() {
            return Ok(Some(Node::Any));
        }
        if let [("$ref", Value::String(target))] = asserting.as_slice() {
            return self.reference(target).map(|id| id.map(Node::Ref));
        }
        let assertions = asserting.len();
        let mut n = Native { types: ANY, ..Native::default() };
        for (keyword, value) in asserting {
            let ok = match keyword {
                "type" => types(value).map(|t| n.types = t).is_some(),
                "enum" => strings_or_null(value).map(|v| n.one_of_values = Some(v)).is_some(),
                "const" => {
                    strings_or_null(&Value::Array(vec![value.clone()])).map(|v| n.one_of_values = Some(v)).is_some()
                }
                "minimum" => value.as_f64().map(|v| n.minimum = Some(v)).is_some(),
                "maximum" => value.as_f64().map(|v| n.maximum = Some(v)).is_some(),
                "exclusiveMinimum" => value.as_f64().map(|v| n.exclusive_minimum = Some(v)).is_some(),
                "exclusiveMaximum" => value.as_f64().map(|v| n.exclusive_maximum = Some(v)).is_some(),
                "minLength" => count(value).map(|v| n.min_length = Some(v)).is_some(),
                "maxLength" => count(value).map(|v| n.max_length = Some(v)).is_some(),
                "minItems" => count(value).map(|v| n.min_items = Some(v)).is_some(),
                "maxItems" => count(value).map(|v| n.max_items = Some(v)).is_some(),
                "items" => {
                    n.items = Some(self.node(value)?);
                    true
                }
                "prefixItems" => match value.as_array() {
                    Some(schemas) => {
                        n.prefix_items = schemas.iter().map(|s| self.node(s)).collect::<Result<_, _>>()?;
                        true
                    }
                    None => false,
                },
                "properties" => match value.as_object() {
                    Some(props) => {
                        for (name, schema) in props {
                            let id = self.node(schema)?;
                            n.properties.insert(name.clone(), id);
                        }
                        true
                    }
                    None => false,
                },
                "required" => match value.as_array() {
                    Some(names) if names.iter().all(Value::is_string) => {
                        n.required = names.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect();
                        true
                    }
                    _ => false,
                },
                "additionalProperties" => {
                    n.additional = Some(self.node(value)?);
                    true
                }
                "anyOf" | "oneOf" => match self.by_type(value)? {
                    Some(branches) => {
                        n.by_type = branches;
                        true
                    }
                    None => match self.by_tag(keyword, value)? {
                        Some(by_tag) => {
                            n.types = OBJECT;
                            n.by_tag = Some(by_tag);
                            true
                        }
                        None => false,
                    },
                },
                _ => false,
            };
            if !ok {
                return Ok(None);
            }
        }
        // A choice next to assertions of its own would need both: the fallback.
        if (!n.by_type.is_empty() || n.by_tag.is_some()) && assertions != 1 {
            return Ok(None);
        }
        Ok(Some(Node::Native(Box::new(n))))
    }

    /// A local `$ref` (`#` or `#/$defs/<name>`); `None` for anything else.
    fn reference(&mut self, target: &str) -> Result<Option<NodeId>, String> {
        if target == "#" {
            return Ok(Some(0));
        }
        let Some(name) = target.strip_prefix("#/$defs/") else { return Ok(None) };
        if let Some(id) = self.defs.get(name) {
            return Ok(Some(*id));
        }
        let Some(schema) = self.root.get("$defs").and_then(|d| d.get(name)) else {
            return Err(format!("$ref {target} names no definition"));
        };
        // Reserve the id first: a recursive definition refers to itself.
        let id = self.nodes.len();
        self.defs.insert(name.to_owned(), id);
        let compiled = self.node(schema)?;
        debug_assert_eq!(compiled, id);
        Ok(Some(id))
    }

    /// The branches of an `anyOf` / `oneOf` when they take pairwise disjoint JSON types
    /// (then "any" and "exactly one" agree, and the value's type picks the branch).
    fn by_type(&mut self, branches: &Value) -> Result<Option<Vec<(u8, NodeId)>>, String> {
        let Some(branches) = branches.as_array() else { return Ok(None) };
        let mut out = Vec::new();
        let mut seen = 0u8;
        for branch in branches {
            let id = self.node(branch)?;
            let Some(types) = self.types_of(id) else { return Ok(None) };
            if types & seen != 0 {
                return Ok(None);
            }
            seen |= types;
            out.push((types, id));
        }
        Ok((!out.is_empty()).then_some(out))
    }

    /// The branches of an `anyOf` / `oneOf` over objects told apart by a tag: each branch an
    /// object schema (inline or a local `$ref`) requiring the same property, whose schema is
    /// a string `const` (or a one-string `enum`) no other branch has. "Any" and "exactly one"
    /// agree, since at most one branch's tag can match.
    fn by_tag(&mut self, keyword: &str, branches: &Value) -> Result<Option<ByTag>, String> {
        let Some(list) = branches.as_array().filter(|l| !l.is_empty()) else { return Ok(None) };
        let mut key: Option<String> = None;
        let mut tags: Vec<String> = Vec::new();
        for branch in list {
            let branch = match branch.get("$ref").and_then(Value::as_str) {
                Some(target) => match target.strip_prefix("#/$defs/").and_then(|n| self.root.get("$defs")?.get(n)) {
                    Some(def) => def,
                    None => return Ok(None),
                },
                None => branch,
            };
            let Some((k, tag)) = tag_of(branch, key.as_deref()) else { return Ok(None) };
            if tags.contains(&tag) {
                return Ok(None);
            }
            key = Some(k);
            tags.push(tag);
        }
        let Some(key) = key else { return Ok(None) };
        let mut out = Vec::with_capacity(list.len());
        for (branch, tag) in list.iter().zip(tags) {
            let id = self.node(branch)?;
            // The branch must be a plain object node, so that its properties can be walked
            // once its tag is known.
            let plain = |mut id: NodeId| {
                for _ in 0..64 {
                    match &self.nodes[id] {
                        Node::Ref(to) => id = *to,
                        Node::Native(n) => return n.by_type.is_empty() && n.by_tag.is_none() && n.types == OBJECT,
                        _ => return false,
                    }
                }
                false
            };
            if !plain(id) {
                return Ok(None);
            }
            out.push((tag, id));
        }
        let Node::Fallback(whole) = self.fallback(&serde_json::json!({ keyword: branches }))? else {
            unreachable!("fallback makes a fallback node")
        };
        Ok(Some(ByTag { key, branches: out, whole }))
    }

    /// The JSON types a compiled node can accept, when its `type` says so.
    fn types_of(&self, mut id: NodeId) -> Option<u8> {
        for _ in 0..64 {
            match &self.nodes[id] {
                Node::Ref(to) => id = *to,
                Node::Native(n) if n.by_type.is_empty() && n.types != ANY => return Some(n.types),
                _ => return None,
            }
        }
        None
    }
}

fn types(value: &Value) -> Option<u8> {
    let one = |name: &str| match name {
        "null" => Some(NULL),
        "boolean" => Some(BOOLEAN),
        "integer" => Some(INTEGER),
        "number" => Some(INTEGER | NUMBER),
        "string" => Some(STRING),
        "array" => Some(ARRAY),
        "object" => Some(OBJECT),
        _ => None,
    };
    match value {
        Value::String(name) => one(name),
        Value::Array(names) => names.iter().try_fold(0, |acc, n| Some(acc | one(n.as_str()?)?)),
        _ => None,
    }
}

/// The tag property and value of a tagged enum's branch: an object schema (`type: object`)
/// that requires a property (`key`, when given) whose schema allows one string only.
fn tag_of(branch: &Value, key: Option<&str>) -> Option<(String, String)> {
    if branch.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let properties = branch.get("properties")?.as_object()?;
    let required = branch.get("required")?.as_array()?;
    let one_string = |schema: &Value| -> Option<String> {
        let map = schema.as_object()?;
        let mut tag = None;
        for (k, v) in map {
            match k.as_str() {
                "const" => tag = Some(v.as_str()?.to_owned()),
                "enum" => match v.as_array()?.as_slice() {
                    [Value::String(s)] => tag = Some(s.clone()),
                    _ => return None,
                },
                "type" if v.as_str() == Some("string") => {}
                k if ANNOTATIONS.contains(&k) => {}
                _ => return None,
            }
        }
        tag
    };
    properties.iter().find_map(|(k, schema)| {
        if key.is_some_and(|key| key != k) || !required.iter().any(|r| r.as_str() == Some(k)) {
            return None;
        }
        one_string(schema).map(|tag| (k.clone(), tag))
    })
}

fn strings_or_null(value: &Value) -> Option<Vec<Option<String>>> {
    value
        .as_array()?
        .iter()
        .map(|v| match v {
            Value::String(s) => Some(Some(s.clone())),
            Value::Null => Some(None),
            _ => None,
        })
        .collect()
}

fn count(value: &Value) -> Option<usize> {
    value.as_u64().and_then(|v| usize::try_from(v).ok())
}

/// Checks one value of the input against a node.
struct Seed<'s> {
    schema: &'s OutputSchema,
    node: NodeId,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn fail<E: de::Error>(what: impl fmt::Display) -> Result<(), E> {
    Err(E::custom(what))
}

impl Seed<'_> {
    /// The native node for a value of type `t`, or why the value fails; `Ok(None)` when
    /// anything goes; `Err(Ok(i))` when fallback `i` must see the value.
    fn native<E: de::Error>(&self, t: u8) -> Result<Option<&Native>, Result<usize, E>> {
        match self.schema.resolve(self.node, t) {
            None | Some(Node::Never) => Err(Err(E::custom("no schema branch takes this type"))),
            Some(Node::Any) => Ok(None),
            Some(Node::Fallback(i)) => Err(Ok(*i)),
            Some(Node::Native(n)) => {
                if n.types & t == 0 {
                    return Err(Err(E::custom("wrong type")));
                }
                Ok(Some(n))
            }
            Some(Node::Ref(_)) => unreachable!("resolve follows references"),
        }
    }

    fn fallback<E: de::Error>(&self, i: usize, value: &Value) -> Result<(), E> {
        if self.schema.fallbacks[i].is_valid(value) { Ok(()) } else { fail(format!("{value} fails its schema")) }
    }

    fn scalar<E: de::Error>(
        &self,
        t: u8,
        value: impl FnOnce() -> Value,
        check: impl FnOnce(&Native) -> Result<(), E>,
    ) -> Result<(), E> {
        match self.native::<E>(t) {
            Ok(None) => Ok(()),
            Ok(Some(n)) => {
                if let Some(allowed) = &n.one_of_values
                    && t != STRING
                    && !(t == NULL && allowed.contains(&None))
                {
                    return fail("not one of the allowed values");
                }
                check(n)
            }
            Err(Ok(i)) => self.fallback(i, &value()),
            Err(Err(e)) => Err(e),
        }
    }

    fn number<E: de::Error>(&self, integral: bool, value: f64, json: impl FnOnce() -> Value) -> Result<(), E> {
        let t = if integral { INTEGER } else { NUMBER };
        self.scalar(t, json, |n| {
            let below = n.minimum.is_some_and(|m| value < m) || n.exclusive_minimum.is_some_and(|m| value <= m);
            let above = n.maximum.is_some_and(|m| value > m) || n.exclusive_maximum.is_some_and(|m| value >= m);
            if below || above { fail(format!("{value} is out of range")) } else { Ok(()) }
        })
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar(NULL, || Value::Null, |_| Ok(()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.scalar(BOOLEAN, || Value::Bool(v), |_| Ok(()))
    }

    #[allow(clippy::cast_precision_loss)] // bounds in schemas are f64 too
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.number(true, v as f64, || Value::from(v))
    }

    #[allow(clippy::cast_precision_loss)]
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.number(true, v as f64, || Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.number(v.fract() == 0.0, v, || Value::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.scalar(
            STRING,
            || Value::String(v.to_owned()),
            |n| {
                if let Some(allowed) = &n.one_of_values
                    && !allowed.iter().any(|a| a.as_deref() == Some(v))
                {
                    return fail(format!("{v:?} is not one of the allowed values"));
                }
                if n.min_length.is_some() || n.max_length.is_some() {
                    let len = v.chars().count();
                    if n.min_length.is_some_and(|m| len < m) || n.max_length.is_some_and(|m| len > m) {
                        return fail(format!("{v:?} has a length out of range"));
                    }
                }
                Ok(())
            },
        )
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let n = match self.native::<A::Error>(ARRAY) {
            Ok(n) => n,
            Err(Ok(i)) => {
                let value = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                return self.fallback(i, &value);
            }
            Err(Err(e)) => return Err(e),
        };
        let mut len = 0usize;
        loop {
            let node = n.and_then(|n| n.prefix_items.get(len).copied().or(n.items));
            let more = match node {
                Some(node) => seq.next_element_seed(Seed { schema: self.schema, node })?.is_some(),
                None => seq.next_element::<de::IgnoredAny>()?.is_some(),
            };
            if !more {
                break;
            }
            len += 1;
        }
        if let Some(n) = n
            && (n.min_items.is_some_and(|m| len < m) || n.max_items.is_some_and(|m| len > m))
        {
            return fail(format!("an array of {len} items is out of range"));
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let n = match self.native::<A::Error>(OBJECT) {
            Ok(Some(n)) => n,
            Ok(None) => {
                while map.next_entry::<de::IgnoredAny, de::IgnoredAny>()?.is_some() {}
                return Ok(());
            }
            Err(Ok(i)) => {
                let value = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                return self.fallback(i, &value);
            }
            Err(Err(e)) => return Err(e),
        };
        let Some(by_tag) = &n.by_tag else { return self.properties(n, map, None) };
        // A tagged enum: the first key should be the tag, whose value picks the branch.
        let Some(first) = map.next_key::<Key<'de>>()? else { return fail("an empty object has no tag") };
        if first.as_str() != by_tag.key {
            // Not written tag first: the whole object goes to the fallback.
            let first_value: Value = map.next_value()?;
            let Value::Object(mut rest) = Value::deserialize(de::value::MapAccessDeserializer::new(map))? else {
                unreachable!("a map deserializes into an object")
            };
            rest.insert(first.as_str().to_owned(), first_value);
            return self.fallback(by_tag.whole, &Value::Object(rest));
        }
        // A tag that is not a string fails here, as it fails every branch.
        let tag = map.next_value::<Key<'de>>()?;
        let Some(&(_, node)) = by_tag.branches.iter().find(|(t, _)| t == tag.as_str()) else {
            return fail(format!("{:?} is no branch's tag", tag.as_str()));
        };
        let Some(Node::Native(branch)) = self.schema.resolve(node, OBJECT) else {
            unreachable!("tagged branches are compiled as plain objects")
        };
        self.properties(branch, map, Some(first.as_str()))
    }
}

impl Seed<'_> {
    /// The rest of an object checked against an object node; `read` is the key already read
    /// and checked (a tagged enum's tag), if any.
    fn properties<'de, A: MapAccess<'de>>(&self, n: &Native, mut map: A, read: Option<&str>) -> Result<(), A::Error> {
        // Which required properties were seen: a bit each (no allocation) for the usual few.
        let mut bits = 0u64;
        let mut many: Vec<bool> = if n.required.len() > 64 { vec![false; n.required.len()] } else { Vec::new() };
        let mut see = |key: &str| {
            if let Some(i) = n.required.iter().position(|r| r == key) {
                if i < 64 { bits |= 1 << i } else { many[i] = true }
            }
        };
        if let Some(key) = read {
            see(key);
        }
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let key = key.as_str();
            see(key);
            match n.properties.get(key).copied().or(n.additional) {
                Some(node) => map.next_value_seed(Seed { schema: self.schema, node })?,
                None => map.next_value::<de::IgnoredAny>().map(drop)?,
            }
        }
        let missing = (0..n.required.len()).find(|&i| if i < 64 { bits & (1 << i) == 0 } else { !many[i] });
        if let Some(missing) = missing {
            return fail(format!("property {:?} is missing", n.required[missing]));
        }
        Ok(())
    }
}

/// An object key, borrowed from the input when it has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A tagged enum's choice is walked natively (the tag picks the branch), not handed to
    /// the fallback; an object written with its tag elsewhere still gets jsonschema's verdict.
    #[test]
    fn a_tagged_choice_is_native_and_its_tag_picks_the_branch() {
        let schema = json!({
            "oneOf": [
                {"type": "object", "properties": {"type": {"type": "string", "const": "dropped"},
                    "data": {"type": "object", "properties": {"column": {"type": "integer", "maximum": 6}},
                             "required": ["column"], "additionalProperties": false}},
                 "required": ["type", "data"], "additionalProperties": false},
                {"type": "object", "properties": {"type": {"type": "string", "const": "quiet"}},
                 "required": ["type"], "additionalProperties": false}
            ]
        });
        let compiled = OutputSchema::compile(&schema).unwrap();
        assert!(matches!(&compiled.nodes[0], Node::Native(n) if n.by_tag.is_some()));
        for (text, valid) in [
            (r#"{"type":"dropped","data":{"column":3}}"#, true),
            (r#"{"type":"dropped","data":{"column":7}}"#, false),
            (r#"{"type":"dropped"}"#, false),
            (r#"{"type":"quiet"}"#, true),
            (r#"{"type":"quiet","data":{}}"#, false),
            (r#"{"type":"other"}"#, false),
            (r#"{"type":3}"#, false),
            (r#"{}"#, false),
            (r#""dropped""#, false),
            (r#"{"data":{"column":3},"type":"dropped"}"#, true),
            (r#"{"data":{"column":9},"type":"dropped"}"#, false),
        ] {
            assert_eq!(compiled.check(text).is_ok(), valid, "{text}");
        }
    }

    #[test]
    fn branches_with_the_same_tag_are_not_a_tagged_choice() {
        let branch = json!({"type": "object", "properties": {"type": {"const": "a"}}, "required": ["type"]});
        let compiled = OutputSchema::compile(&json!({"oneOf": [branch.clone(), branch]})).unwrap();
        assert!(matches!(&compiled.nodes[0], Node::Fallback(_)));
        // Both branches match: "exactly one" fails.
        assert!(compiled.check(r#"{"type":"a"}"#).is_err());
    }
}
