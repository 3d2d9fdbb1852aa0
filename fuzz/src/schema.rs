//! Values drawn from a JSON Schema (the subset schemars generates: `$ref` into `$defs`,
//! `oneOf`/`anyOf`/`allOf`, `const`, `enum`, `type` with ranges and lengths, `properties`
//! with `required`, `items`/`prefixItems`), so a game's config and payloads are mostly
//! well-formed, and off the schema where the input says so ([`Generator::noise`]): a value
//! out of range, a missing required member, an unknown member, any JSON at all.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Value, json};

use crate::json::{arbitrary_string, arbitrary_value};

/// Draws values from one schema document.
pub struct Generator<'s> {
    root: &'s Value,
    /// One in how many nodes goes off the schema (0: never).
    pub noise: u32,
}

impl<'s> Generator<'s> {
    pub fn new(root: &'s Value, noise: u32) -> Self {
        Self { root, noise }
    }

    /// A value for the whole document.
    pub fn value(&self, u: &mut Unstructured<'_>) -> Result<Value> {
        self.node(u, self.root, 6)
    }

    fn off(&self, u: &mut Unstructured<'_>) -> Result<bool> {
        Ok(self.noise > 0 && u.ratio(1, self.noise)?)
    }

    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }

    fn node(&self, u: &mut Unstructured<'_>, schema: &'s Value, depth: usize) -> Result<Value> {
        if depth == 0 || self.off(u)? {
            return arbitrary_value(u, 2);
        }
        let Some(s) = schema.as_object() else {
            // `true`, `false` or nonsense: anything.
            return arbitrary_value(u, 2);
        };
        if let Some(target) = s.get("$ref").and_then(Value::as_str).and_then(|r| self.resolve(r)) {
            return self.node(u, target, depth - 1);
        }
        if let Some(c) = s.get("const") {
            return Ok(c.clone());
        }
        if let Some(Value::Array(options)) = s.get("enum")
            && !options.is_empty()
        {
            return Ok(u.choose(options)?.clone());
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(options)) = s.get(key)
                && !options.is_empty()
            {
                let option = u.choose(options)?;
                return self.node(u, option, depth - 1);
            }
        }
        if let Some(Value::Array(all)) = s.get("allOf")
            && let Some(first) = all.first()
        {
            return self.node(u, first, depth - 1);
        }
        let kind = match s.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(types)) if !types.is_empty() => u.choose(types)?.as_str().unwrap_or("null"),
            _ if s.contains_key("properties") => "object",
            _ => return arbitrary_value(u, 2),
        };
        match kind {
            "null" => Ok(Value::Null),
            "boolean" => Ok(Value::Bool(u.arbitrary()?)),
            "integer" => self.integer(u, s),
            "number" => {
                let i = self.integer(u, s)?;
                Ok(if u.ratio(1, 4)? { json!(i.as_f64().unwrap_or(0.0) + 0.5) } else { i })
            }
            "string" => {
                let min = s.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
                let mut text = arbitrary_string(u)?;
                while text.chars().count() < min {
                    text.push('a');
                }
                if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
                    text = text.chars().take(max as usize).collect();
                }
                Ok(Value::String(text))
            }
            "array" => self.array(u, s, depth),
            "object" => self.object(u, s, depth),
            _ => arbitrary_value(u, 2),
        }
    }

    fn integer(&self, u: &mut Unstructured<'_>, s: &Map<String, Value>) -> Result<Value> {
        let bound = |key: &str| s.get(key).and_then(Value::as_f64);
        let low = bound("minimum").or(bound("exclusiveMinimum").map(|m| m + 1.0)).unwrap_or(-8.0).max(-1e15);
        let high = bound("maximum").or(bound("exclusiveMaximum").map(|m| m - 1.0)).unwrap_or(low + 16.0).min(1e15);
        let (low, high) = (low.ceil() as i64, high.floor() as i64);
        if low > high {
            return Ok(json!(low));
        }
        // Mostly near the edges and small: where rules branch.
        Ok(json!(match u.int_in_range(0..=3u8)? {
            0 => low,
            1 => high,
            _ => u.int_in_range(low..=high.min(low.saturating_add(64)))?,
        }))
    }

    fn array(&self, u: &mut Unstructured<'_>, s: &'s Map<String, Value>, depth: usize) -> Result<Value> {
        let mut items = Vec::new();
        if let Some(Value::Array(prefix)) = s.get("prefixItems") {
            for item in prefix {
                items.push(self.node(u, item, depth - 1)?);
            }
            return Ok(Value::Array(items));
        }
        let min = s.get("minItems").and_then(Value::as_u64).unwrap_or(0).min(12);
        let max = s.get("maxItems").and_then(Value::as_u64).unwrap_or(min + 4).clamp(min, min + 8);
        let n = u.int_in_range(min..=max)?;
        let item = s.get("items").unwrap_or(&Value::Bool(true));
        for _ in 0..n {
            items.push(self.node(u, item, depth - 1)?);
        }
        Ok(Value::Array(items))
    }

    fn object(&self, u: &mut Unstructured<'_>, s: &'s Map<String, Value>, depth: usize) -> Result<Value> {
        let required: Vec<&str> =
            s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let mut out = Map::new();
        if let Some(Value::Object(properties)) = s.get("properties") {
            for (name, schema) in properties {
                let include = if required.contains(&name.as_str()) { !self.off(u)? } else { u.ratio(1, 2)? };
                if include {
                    out.insert(name.clone(), self.node(u, schema, depth - 1)?);
                }
            }
        }
        if self.off(u)? {
            out.insert(arbitrary_string(u)?, arbitrary_value(u, 1)?);
        }
        Ok(Value::Object(out))
    }
}
