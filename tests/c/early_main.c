/* The program of t_init.sh: reports what early_lib's constructor saw. */
#include <signal.h>
#include <stdio.h>

extern volatile sig_atomic_t early_fired;
extern int early_close_range_rc, early_close_range_errno, early_still_open;

int main(void)
{
	printf("fired=%d close_range=%d errno=%d still_open=%d\n", (int)early_fired,
	       early_close_range_rc, early_close_range_errno, early_still_open);
	return 0;
}
