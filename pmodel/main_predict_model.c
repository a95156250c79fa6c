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
 * The module (pmodel/, pm.h): the command line in pm_args.c (a settings
 * table per command: flags, --help, man page), one file per command (pm_show.c, pm_predict.c, pm_transform.c, pm_evaluate.c), shared
 * reading in pm_io.c; it reaches the runtime through rt.h only.
 */
#include "pm.h"

#include <string.h>

int main(int argc, char **argv)
{
    /* convert and batch-predict read their own flags by their own tables
     * (pm_convert.c, pm_batch.c) */
    if (argc >= 2 && strcmp(argv[1], "convert") == 0)
        return pm_cmd_convert(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "batch-predict") == 0)
        return pm_cmd_batch_predict(argc, argv);
    pm_opts o;
    int rc = pm_parse_args(argc, argv, &o);
    if (rc)
        return rc;
    if (o.help) {
        pm_print_help(o.cmd);
        pm_opts_free(&o);
        return 0;
    }
    if (strcmp(o.cmd, "show") == 0)
        rc = pm_cmd_show(&o);
    else if (strcmp(o.cmd, "predict") == 0)
        rc = pm_cmd_predict(&o);
    else if (strcmp(o.cmd, "evaluate") == 0)
        rc = pm_cmd_evaluate(&o);
    else if (strcmp(o.cmd, "explain") == 0)
        rc = pm_cmd_explain(&o);
    else if (strcmp(o.cmd, "stats") == 0)
        rc = pm_cmd_stats(&o);
    else if (strcmp(o.cmd, "validate") == 0)
        rc = pm_cmd_validate(&o);
    else
        rc = pm_cmd_transform(&o);
    pm_opts_free(&o);
    return rc;
}
