/* Wall-clock timing. */
#ifndef CDL_TIMER_H
#define CDL_TIMER_H

/* Seconds on a monotonic clock (only differences are meaningful). */
double time_now_s(void);

#endif
