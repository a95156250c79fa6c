/* stub */
#include "pm.h"
int pm_cmd_batch_predict(int argc, char **argv) { (void)argc; (void)argv; return 2; }
