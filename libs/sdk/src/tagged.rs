//! An adjacently tagged value split into its tag and its content's JSON text while it is
//! serialized ([`split`]).
//!
//! serde writes an adjacently tagged enum (`#[serde(tag = "type", content = "payload")]`) as a
//! struct of two fields, the tag and the content; catching those fields gives the tag and the
//! content's text without a `serde_json::Value` tree and without parsing the whole again.
//! Hand-rolled (a serializer that accepts only that shape) because serde offers no way to
//! take a variant's content apart from its tag.

use std::fmt;

use serde::ser::{self, Impossible, Serialize, SerializeStruct, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// `v` did not serialize as a struct of `type` and the content field only (or its content
/// failed to serialize: the caller's slower path reports why).
#[derive(Debug)]
pub(crate) struct NotTagged;

impl fmt::Display for NotTagged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not an adjacently tagged value")
    }
}

impl std::error::Error for NotTagged {}

impl ser::Error for NotTagged {
    fn custom<T: fmt::Display>(_: T) -> Self {
        NotTagged
    }
}

/// The tag of `v` and the text of its `content` field (`None` for a variant without one).
pub(crate) fn split<T: Serialize + ?Sized>(
    v: &T,
    content: &'static str,
) -> Result<(String, Option<Box<RawValue>>), NotTagged> {
    v.serialize(Splitter { content })
}

struct Splitter {
    content: &'static str,
}

/// The fields of the struct serde writes for an adjacently tagged value.
struct Fields {
    content: &'static str,
    tag: Option<String>,
    data: Option<Box<RawValue>>,
}

impl SerializeStruct for Fields {
    type Ok = (String, Option<Box<RawValue>>);
    type Error = NotTagged;

    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result<(), NotTagged> {
        if key == "type" && self.tag.is_none() {
            let Ok(Value::String(tag)) = serde_json::to_value(value) else { return Err(NotTagged) };
            self.tag = Some(tag);
        } else if key == self.content && self.data.is_none() {
            self.data = Some(serde_json::value::to_raw_value(value).map_err(|_| NotTagged)?);
        } else {
            return Err(NotTagged);
        }
        Ok(())
    }

    fn end(self) -> Result<Self::Ok, NotTagged> {
        Ok((self.tag.ok_or(NotTagged)?, self.data))
    }
}

/// Refuses every shape but a struct.
macro_rules! not_tagged {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $method(self, $(_: $arg),*) -> Result<Self::Ok, NotTagged> { Err(NotTagged) })*
    };
}

impl Serializer for Splitter {
    type Ok = (String, Option<Box<RawValue>>);
    type Error = NotTagged;
    type SerializeSeq = Impossible<Self::Ok, NotTagged>;
    type SerializeTuple = Impossible<Self::Ok, NotTagged>;
    type SerializeTupleStruct = Impossible<Self::Ok, NotTagged>;
    type SerializeTupleVariant = Impossible<Self::Ok, NotTagged>;
    type SerializeMap = Impossible<Self::Ok, NotTagged>;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Impossible<Self::Ok, NotTagged>;

    not_tagged!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<Self::Ok, NotTagged> {
        Err(NotTagged)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, _: &T) -> Result<Self::Ok, NotTagged> {
        Err(NotTagged)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Self::Ok, NotTagged> {
        Err(NotTagged)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotTagged> {
        Err(NotTagged)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotTagged> {
        Err(NotTagged)
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, NotTagged> {
        Err(NotTagged)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotTagged> {
        Err(NotTagged)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotTagged> {
        Err(NotTagged)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fields, NotTagged> {
        Ok(Fields { content: self.content, tag: None, data: None })
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotTagged> {
        Err(NotTagged)
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;

    #[derive(Serialize)]
    #[serde(tag = "type", content = "payload", rename_all = "kebab-case")]
    enum Action {
        DropDisc { column: u8 },
        Pass,
        Named(String),
    }

    #[derive(Serialize)]
    struct Flat {
        r#type: String,
        other: u8,
    }

    #[test]
    fn the_tag_and_the_content_text_come_apart_as_serde_writes_them() {
        let (tag, content) = split(&Action::DropDisc { column: 3 }, "payload").unwrap();
        assert_eq!((tag.as_str(), content.unwrap().get()), ("drop-disc", r#"{"column":3}"#));
        let (tag, content) = split(&Action::Pass, "payload").unwrap();
        assert_eq!((tag.as_str(), content.is_none()), ("pass", true));
        let (tag, content) = split(&Action::Named("a\"b".into()), "payload").unwrap();
        assert_eq!((tag.as_str(), content.unwrap().get()), ("named", r#""a\"b""#));
    }

    #[test]
    fn anything_else_is_not_tagged() {
        assert!(split(&Action::Pass, "data").is_ok(), "a variant without content has no content field");
        assert!(split(&Action::DropDisc { column: 1 }, "data").is_err(), "another content name");
        assert!(split(&Flat { r#type: "x".into(), other: 1 }, "payload").is_err());
        assert!(split(&3u8, "payload").is_err());
        assert!(split(&serde_json::json!({"type": "x", "payload": {}}), "payload").is_err(), "a map, not a struct");
    }
}
