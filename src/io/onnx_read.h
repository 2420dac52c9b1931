/* ONNX model files, read side: the parts of a ModelProto that an importer needs, decoded with
 * io/protobuf_read.h into plain structs (every string NUL-terminated and malloc'd).
 *
 *   ModelProto  ir_version, the default-domain opset, graph
 *   GraphProto  nodes (in file order, which ONNX requires to be topological), initializers,
 *               inputs and outputs with their element type and shape
 *   NodeProto   op_type, name, domain, inputs, outputs, attributes
 *   Attribute   FLOAT, INT, STRING, TENSOR, FLOATS, INTS (others are kept with their type only)
 *   Tensor      FLOAT (raw_data or float_data), INT64 (raw_data or int64_data), INT32 and
 *               BOOL (raw_data or int32_data, widened to int64: a bool is 0 or 1, as Dropout's
 *               training_mode); other data types and external data
 *               are refused, naming the tensor
 *
 * Fields the importer does not use (doc strings, metadata, value_info, sparse initializers,
 * functions) are skipped. A malformed or truncated file fails with "malformed protobuf: ..."
 * prefixed by where in the model it was found. */
#ifndef CDL_ONNX_READ_H
#define CDL_ONNX_READ_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define ONNX_READ_MAX_DIMS 8

/* TensorProto.DataType values read. */
enum { ONNX_READ_FLOAT = 1, ONNX_READ_INT32 = 6, ONNX_READ_INT64 = 7, ONNX_READ_BOOL = 9 };

/* AttributeProto.AttributeType values. */
enum {
    ONNX_READ_ATTR_FLOAT = 1,
    ONNX_READ_ATTR_INT = 2,
    ONNX_READ_ATTR_STRING = 3,
    ONNX_READ_ATTR_TENSOR = 4,
    ONNX_READ_ATTR_FLOATS = 6,
    ONNX_READ_ATTR_INTS = 7
};

typedef struct OnnxTensor {
    char *name;
    int data_type; /* ONNX_READ_FLOAT or ONNX_READ_INT64 (INT32 and BOOL are widened) */
    int n_dims;    /* 0: a scalar */
    int64_t dims[ONNX_READ_MAX_DIMS];
    size_t count;  /* product of dims */
    float *floats; /* FLOAT: [count] */
    int64_t *ints; /* INT64: [count] */
} OnnxTensor;

typedef struct OnnxAttribute {
    char *name;
    int type; /* ONNX_READ_ATTR_*, or another AttributeType whose value is not kept */
    float f;
    int64_t i;
    char *s; /* STRING */
    int64_t *ints;
    int n_ints;
    float *floats;
    int n_floats;
    OnnxTensor *t; /* TENSOR */
} OnnxAttribute;

typedef struct OnnxNode {
    char *name, *op_type, *domain; /* "" when absent */
    char **inputs;                 /* an empty name is an omitted optional input */
    int n_inputs;
    char **outputs;
    int n_outputs;
    OnnxAttribute *attrs;
    int n_attrs;
} OnnxNode;

/* A graph input or output: float tensors have elem_type 1; dims[k] is -1 where the file gives
 * a symbolic dimension or none. */
typedef struct OnnxValueInfo {
    char *name;
    int elem_type;
    int n_dims;
    int64_t dims[ONNX_READ_MAX_DIMS];
} OnnxValueInfo;

typedef struct OnnxModel {
    int64_t ir_version;
    int64_t opset; /* of the default ("" or "ai.onnx") domain; 0 when not imported */
    char *producer;
    OnnxNode *nodes;
    int n_nodes;
    OnnxTensor *initializers;
    int n_initializers;
    OnnxValueInfo *inputs, *outputs;
    int n_inputs, n_outputs;
} OnnxModel;

/* Decodes a whole serialized ModelProto. On failure *m is left empty (onnx_model_free is still
 * safe) and e says what is wrong. */
int onnx_model_parse(const void *bytes, size_t len, OnnxModel *m, Error *e);
/* Reads and decodes the file at path; errors start with "PATH: ". */
int onnx_model_load(const char *path, OnnxModel *m, Error *e);
void onnx_model_free(OnnxModel *m);

/* Lookups (NULL when absent). */
const OnnxTensor *onnx_model_initializer(const OnnxModel *m, const char *name);
const OnnxAttribute *onnx_node_attr(const OnnxNode *n, const char *name);

#endif
