"""The schemas of the schema-reference tests, made by hand: a Protobuf order.proto importing money.proto, which
imports currency.proto and a well-known Timestamp; an Avro Order using the named types of Money and Currency,
schemas of other subjects; a JSON Schema order whose $refs reach a money schema of another subject."""

from __future__ import annotations

import base64
import json

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
from google.protobuf.descriptor import FieldDescriptor as F

OPTIONAL = F.LABEL_OPTIONAL
PRICE_TYPE = "struct<id:bigint,price:struct<units:bigint,currency:string,priced_at:timestamp>>"
MONEY = {"type": "record", "name": "Money", "namespace": "common",
         "fields": [{"name": "units", "type": "long"}, {"name": "currency", "type": "common.Currency"}]}
CURRENCY = {"type": "enum", "name": "Currency", "namespace": "common", "symbols": ["XXX", "EUR", "NOK"]}
ORDER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"},
                                                       {"name": "price", "type": ["null", "common.Money"]}]}
AVRO_REFERENCES = (("common.Currency", json.dumps(CURRENCY)), ("common.Money", json.dumps(MONEY)))
JSON_MONEY = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"units": {"type": "integer"}, "currency": {"$ref": "#/definitions/code"}},
              "definitions": {"code": {"type": "string", "enum": ["EUR", "NOK"]}}}
JSON_ORDER = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"id": {"type": "integer"}, "price": {"$ref": "schemas/money.json"},
                             "refund": {"$ref": "#/definitions/refund"}},
              "definitions": {"refund": {"$ref": "schemas/money.json"}}}


def files(package: str) -> list[descriptor_pb2.FileDescriptorProto]:
    """<package>/currency.proto (an enum), <package>/money.proto importing it and a Timestamp, and
    <package>/order.proto importing money.proto: a chain of two references, one well-known import."""
    currency = descriptor_pb2.FileDescriptorProto(name=f"{package}/currency.proto", package=f"{package}.common",
                                                  syntax="proto3")
    code = currency.enum_type.add(name="Currency")
    for number, name in enumerate(["XXX", "EUR", "NOK"]):
        code.value.add(name=name, number=number)
    money = descriptor_pb2.FileDescriptorProto(
        name=f"{package}/money.proto", package=f"{package}.common", syntax="proto3",
        dependency=[f"{package}/currency.proto", "google/protobuf/timestamp.proto"])
    amount = money.message_type.add(name="Money")
    amount.field.add(name="units", number=1, type=F.TYPE_INT64, label=OPTIONAL)
    amount.field.add(name="currency", number=2, type=F.TYPE_ENUM, label=OPTIONAL,
                     type_name=f".{package}.common.Currency")
    amount.field.add(name="priced_at", number=3, type=F.TYPE_MESSAGE, label=OPTIONAL,
                     type_name=".google.protobuf.Timestamp")
    order = descriptor_pb2.FileDescriptorProto(name=f"{package}/order.proto", package=package, syntax="proto3",
                                               dependency=[f"{package}/money.proto"])
    message = order.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=F.TYPE_INT64, label=OPTIONAL)
    message.field.add(name="price", number=2, type=F.TYPE_MESSAGE, label=OPTIONAL,
                      type_name=f".{package}.common.Money")
    return [currency, money, order]


def serialized(proto: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.b64encode(proto.SerializeToString()).decode()


def order_class(package: str):
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    for proto in files(package):
        pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Order"))
