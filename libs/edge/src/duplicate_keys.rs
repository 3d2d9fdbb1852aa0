//! Duplicate object keys in a JSON body: serde keeps the last of `{"p0": "alice", "p0":
//! "mallory"}` silently, so the HTTP API looks for them first and refuses the body naming the
//! key's path, as the protocol's decoder refuses them on the WebSocket. (That decoder, on the
//! hot path, names only a position; this walk keeps the path a platform developer needs.)

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};

/// The path (`seats.p0`, `config.rows`, `items.2.id`) of the first object key that appears
/// twice in `bytes`; `None` when there is none or the body is not JSON (the typed decoding
/// says what is wrong then).
pub(crate) fn duplicate_key(bytes: &[u8]) -> Option<String> {
    let (mut path, mut found) = (Vec::new(), None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let _ = Walk { path: &mut path, found: &mut found }.deserialize(&mut de);
    found
}

/// Walks one JSON value, its path so far in `path`.
struct Walk<'a> {
    path: &'a mut Vec<String>,
    found: &'a mut Option<String>,
}

impl Walk<'_> {
    fn inner(&mut self) -> Walk<'_> {
        Walk { path: &mut *self.path, found: &mut *self.found }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        for index in 0.. {
            self.path.push(index.to_string());
            let more = seq.next_element_seed(self.inner())?;
            self.path.pop();
            if more.is_none() {
                break;
            }
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            self.path.push(key.clone());
            if !seen.insert(key) {
                *self.found = Some(self.path.join("."));
                return Err(A::Error::custom("duplicate key"));
            }
            map.next_value_seed(self.inner())?;
            self.path.pop();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::duplicate_key;

    #[test]
    fn the_first_repeated_key_is_named_by_its_path() {
        let cases = [
            (r#"{"seats":{"p0":"alice","p0":"mallory"}}"#, Some("seats.p0")),
            (r#"{"config":{"rows":12,"rows":6}}"#, Some("config.rows")),
            (r#"{"a":[{"b":1},{"b":2,"b":3}]}"#, Some("a.1.b")),
            (r#"{"x":1,"x":1}"#, Some("x")),
            (r#"{"seats":{"p0":"alice","p1":"bob"},"p0":{"p0":1}}"#, None),
            (r#"[{"a":1},{"a":1}]"#, None),
            ("not json", None),
        ];
        for (body, expected) in cases {
            assert_eq!(duplicate_key(body.as_bytes()).as_deref(), expected, "{body}");
        }
    }
}
