/*
 * main_predict_model.c — build/predict-model: inspect an export and predict
 * locally, without a daemon.
 *
 *   predict-model show --dir EXPORT [--all | --signature_def NAME]
 *       a summary (name, version, inputs, signatures, sizes); --all like
 *       `saved_model_cli show --all` plus the feature columns, the graph and
 *       the training metadata; or one signature.
 *   predict-model predict --dir EXPORT --json-instances FILE
 *   predict-model predict --dir EXPORT --v2-request FILE (an Open Inference
 *       Protocol body: prints the answer predictd sends for it)
 *                         [--format table|json] [--signature_def NAME]
 *       like `gcloud ml-engine local predict`: one JSON instance per line.
 *   predict-model transform --dir EXPORT --json-instances FILE
 *                           [--format text|json] [--leaves]
 *       what the serving input function produced for each instance (and,
 *       with --leaves, the leaf it reaches in each tree).
 *   predict-model evaluate --dir EXPORT --data FILE.csv [--slice COLUMN]...
 *                          [--report REPORT.html] [--format table|json]
 *       TensorFlow Model Analysis's report: metrics overall and per slice,
 *       curves, calibration, confusion matrix (pm_eval.c, pm_report.c).
 *   predict-model convert (--dir EXPORT | --spec SPEC) --input FILES --to FMT
 *       CSV data to TFRecord files of tf.Example and back (pm_convert.c).
 *   predict-model batch-predict --dir EXPORT --input FILES --output-dir DIR
 *       scores files as Vertex AI's batch prediction does, on one core or
 *       the ranks of mpirun (pm_batch.c; docs/batch-prediction.md).
 * --model-dir is another name of --dir in every command.
 *
 * EXPORT is a version directory (holding model.pb) or a base directory
 * holding versions, in which case the newest version is used.
 * Exit status: 0 ok, 1 model or instance error, 2 bad arguments.
 *
 * The module (pmodel/, pm.h): the list of commands and the dispatch in
 * pm_commands.c, one file per command (pm_show.c, pm_predict.c,
 * pm_transform.c, pm_evaluate.c, pm_explain.c, pm_stats.c, pm_validate.c,
 * pm_convert.c, pm_batch.c), their flags read through pm_args.c (a settings
 * table per command: flags, --help, man page), shared reading in pm_io.c;
 * it reaches the runtime through rt.h only.
 */
#include "pm.h"

int main(int argc, char **argv)
{
    return pm_main(argc, argv);
}
