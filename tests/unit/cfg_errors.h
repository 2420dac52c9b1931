/* Shared check for cfg texts that must be refused. */
#ifndef CDL_TEST_CFG_ERRORS_H
#define CDL_TEST_CFG_ERRORS_H

/* CHECKs that text (named "t.cfg") fails to build with CDL_EUSAGE and a message that
 * contains needle. */
void expect_cfg_error(const char *text, const char *needle);

#endif
