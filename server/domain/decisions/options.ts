/** A decision's options: the approve / decline pair the option shapes get when they bring none. */
import type { DecisionOption, DecisionShape } from '@/db/schema';

export const DEFAULT_OPTIONS: DecisionOption[] = [
  { id: 'approve', label: 'Approve' },
  { id: 'decline', label: 'Decline' },
];

export const OPTION_SHAPES: readonly DecisionShape[] = ['option_select', 'option_multiselect'];

export function isDefaultOptions(options: readonly DecisionOption[]): boolean {
  return options.length === 2 && options[0]?.id === 'approve' && options[1]?.id === 'decline';
}
