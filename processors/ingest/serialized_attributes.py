"""An OTLP trace request type whose span attributes stay serialized.

Reading a span's attributes through upb costs a wrapper object, a name lookup and a kind
query per attribute, more than the rest of decoding. Most attributes repeat byte for byte
from span to span (operation names, models, tools, providers, step numbers), so the decoder
parses bodies with this type, where ``Span.attributes`` is ``repeated bytes`` (each item one
serialized ``KeyValue``, the same wire format), and reads each distinct ``KeyValue`` once.

``Span.status`` stays serialized too (``bytes``): most spans leave it empty, and one read of
its bytes costs less than reading the message and its two fields.

Every other field, events and links included, is the OTLP message itself.
"""

from __future__ import annotations

import functools

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

_PACKAGE = "mast_otel.ingest.serialized_attributes"
# Span fields left serialized: each attribute, and the status (empty on most spans, and a
# message costs three reads where its bytes cost one)
_LEFT_SERIALIZED = frozenset({"attributes", "status"})
# OTLP message -> its copy here (the chain from the request down to the span)
_COPIED = {
    "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest": "Request",
    "opentelemetry.proto.trace.v1.ResourceSpans": "ResourceSpans",
    "opentelemetry.proto.trace.v1.ScopeSpans": "ScopeSpans",
    "opentelemetry.proto.trace.v1.Span": "Span",
}


@functools.cache
def request_type() -> type[Message]:
    """The request type, registered in the default descriptor pool on first use (not at import)."""
    file = descriptor_pb2.FileDescriptorProto(name=f"{_PACKAGE.replace('.', '/')}.proto", package=_PACKAGE, syntax="proto3")
    file.dependency.extend([trace_service_pb2.DESCRIPTOR.name, trace_pb2.DESCRIPTOR.name])
    for full_name, name in _COPIED.items():
        source = descriptor_pool.Default().FindMessageTypeByName(full_name)
        message = file.message_type.add()
        source.CopyToProto(message)
        message.name = name
        del message.nested_type[:], message.enum_type[:]  # Span.Event, Span.Link, Span.SpanKind: the OTLP ones
        for field in message.field:
            if field.type_name:
                target = field.type_name.lstrip(".")
                if target in _COPIED:
                    field.type_name = f".{_PACKAGE}.{_COPIED[target]}"
            if name == "Span" and field.name in _LEFT_SERIALIZED:
                field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
                field.ClearField("type_name")
    pool = descriptor_pool.Default()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.Request"))

