/*===- ucp-capi-test.c - The ucp dialect from C ---------------------------===*\
|*                                                                            *|
|* Registers and loads the dialect through its handle, parses a module of     *|
|* parameter maps, runs --ucp-canonicalize and --ucp-verify through a pass    *|
|* manager built by hand and by a pipeline parsed by name, then every other   *|
|* pass (import-mesh; compose into the map file argv[1], lower-copies,        *|
|* plans-to-memref; extract) and the layout attribute's functions, and prints *|
|* the results and diagnostics for FileCheck (test/CAPI/capi.test, linked     *|
|* with the static library; test/CAPI/capi-shared.test, with libUCPCAPI.so of *|
|* an installed tree).                                                        *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "ucp-c/UCP.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdio.h>

static void printText(MlirStringRef text, void *unused) {
  (void)unused;
  fwrite(text.data, 1, text.length, stdout);
}

static MlirLogicalResult printDiagnostic(MlirDiagnostic diagnostic,
                                         void *unused) {
  (void)unused;
  printf("diagnostic: ");
  mlirDiagnosticPrint(diagnostic, printText, NULL);
  printf("\n");
  return mlirLogicalResultSuccess();
}

/* Rank 0's two pieces of one split map, adjacent in F and in the shard:
   canonical form folds them into one. */
static const char *kSplit =
    "ucp.param @w shape [4, 2] world 2 {\n"
    "  ucp.shard rank 0 shape [2, 2] {\n"
    "    ucp.piece [1, 2] src 0 [2, 1] dst 0 [2, 1] on [0]\n"
    "    ucp.piece [1, 2] src 2 [2, 1] dst 2 [2, 1] on [0]\n"
    "  }\n"
    "  ucp.shard rank 1 shape [2, 2] {\n"
    "    ucp.piece [2, 2] src 4 [2, 1] dst 0 [2, 1] on [1]\n"
    "  }\n"
    "}\n";

/* Rows 2 and 3 are held by no rank. */
static const char *kUncovered =
    "ucp.param @hole shape [4, 2] world 1 {\n"
    "  ucp.shard rank 0 shape [2, 2] {\n"
    "    ucp.piece [2, 2] src 0 [2, 1] dst 0 [2, 1] on [0]\n"
    "  }\n"
    "}\n";

/* A tensor sharded with MLIR's mesh dialect. */
static const char *kMesh =
    "mesh.mesh @mesh0(shape = 2)\n"
    "func.func @step(%w: tensor<4x2xf32>) -> tensor<4x2xf32> {\n"
    "  %0 = mesh.shard %w to <@mesh0, [[0]]> : tensor<4x2xf32>\n"
    "  return %0 : tensor<4x2xf32>\n"
    "}\n";

static int run(MlirContext context, const char *text, MlirPassManager pm,
               const char *what) {
  MlirModule module =
      mlirModuleCreateParse(context, mlirStringRefCreateFromCString(text));
  if (mlirModuleIsNull(module)) {
    printf("%s: does not parse\n", what);
    return 1;
  }
  MlirLogicalResult result =
      mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  printf("%s: %s\n", what,
         mlirLogicalResultIsSuccess(result) ? "success" : "failure");
  if (mlirLogicalResultIsSuccess(result))
    mlirOperationPrint(mlirModuleGetOperation(module), printText, NULL);
  mlirModuleDestroy(module);
  return 0;
}

int main(int argc, char **argv) {
  MlirContext context = mlirContextCreate();
  MlirDialectHandle ucp = mlirGetDialectHandle__ucp__();
  mlirDialectHandleRegisterDialect(ucp, context);
  mlirDialectHandleLoadDialect(ucp, context);
  printf("namespace: %.*s\n", (int)mlirDialectHandleGetNamespace(ucp).length,
         mlirDialectHandleGetNamespace(ucp).data);
  mlirContextAttachDiagnosticHandler(context, printDiagnostic, NULL, NULL);

  /* A pass manager built by hand. */
  MlirPassManager pm = mlirPassManagerCreate(context);
  mlirPassManagerAddOwnedPass(pm, mlirCreateUCPCanonicalizePass());
  mlirPassManagerAddOwnedPass(pm, mlirCreateUCPVerifyPass());
  int failed = run(context, kSplit, pm, "canonicalize+verify");
  failed |= run(context, kUncovered, pm, "verify uncovered");
  mlirPassManagerDestroy(pm);

  /* The same by name, through the global registry. */
  mlirRegisterUCPPasses();
  MlirPassManager byName = mlirPassManagerCreate(context);
  MlirOpPassManager top = mlirPassManagerGetAsOpPassManager(byName);
  MlirLogicalResult parsed = mlirParsePassPipeline(
      top, mlirStringRefCreateFromCString("builtin.module(ucp-verify)"),
      printText, NULL);
  printf("\npipeline parsed: %s\n",
         mlirLogicalResultIsSuccess(parsed) ? "yes" : "no");
  failed |= run(context, kSplit, byName, "by name");
  mlirPassManagerDestroy(byName);

  /* Every other pass, on the dialects they read and write. */
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterUCPDialects(registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);
  MlirPassManager mesh = mlirPassManagerCreate(context);
  mlirPassManagerAddOwnedPass(mesh, mlirCreateUCPImportMeshPass());
  mlirPassManagerAddOwnedPass(mesh, mlirCreateUCPVerifyPass());
  failed |= run(context, kMesh, mesh, "import-mesh+verify");
  mlirPassManagerDestroy(mesh);
  if (argc > 1) {
    MlirPassManager lower = mlirPassManagerCreate(context);
    mlirPassManagerAddOwnedPass(
        lower, mlirCreateUCPComposePass(mlirStringRefCreateFromCString(argv[1])));
    mlirPassManagerAddOwnedPass(lower, mlirCreateUCPLowerCopiesPass());
    mlirPassManagerAddOwnedPass(lower, mlirCreateUCPPlansToMemrefPass());
    failed |= run(context, kSplit, lower, "compose+lower-copies+plans-to-memref");
    mlirPassManagerDestroy(lower);
  }
  MlirPassManager extract = mlirPassManagerCreate(context);
  mlirPassManagerAddOwnedPass(extract, mlirCreateUCPExtractPass());
  mlirPassManagerAddOwnedPass(extract, mlirCreateUCPLowerCopiesPass());
  failed |= run(context, kSplit, extract, "extract+lower-copies");
  mlirPassManagerDestroy(extract);

  /* The layout attribute. */
  MlirAttribute layout =
      mlirUCPLayoutAttrGet(context, mlirStringRefCreateFromCString("w"));
  MlirStringRef name = mlirUCPLayoutAttrGetName();
  MlirStringRef param = mlirUCPLayoutAttrGetParam(layout);
  printf("\nlayout %.*s: ", (int)name.length, name.data);
  mlirAttributePrint(layout, printText, NULL);
  printf(" is a layout: %d, names %.*s; a unit attribute is one: %d\n",
         mlirAttributeIsAUCPLayout(layout), (int)param.length, param.data,
         mlirAttributeIsAUCPLayout(mlirUnitAttrGet(context)));
  mlirContextDestroy(context);
  return failed;
}
