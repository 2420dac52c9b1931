/* Subnormal floats flushed to zero in the arithmetic of cdl's threads (subnormals.c). */
#ifndef CDL_SUBNORMALS_H
#define CDL_SUBNORMALS_H

/* Sets MXCSR's flush-to-zero and denormals-are-zero bits on the calling thread and on every
 * thread of OpenMP's current team size; threads made later inherit the caller's (POSIX: a new
 * thread takes its creator's floating-point environment). Nothing on a CPU without SSE. */
void subnormals_flush(void);

#endif
