package dev.holdfast.autoconfigure;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

import dev.holdfast.LockConfigurationException;

/**
 * Reports a {@link LockConfigurationException} at startup with what is wrong and what to change.
 */
class LockConfigurationFailureAnalyzer extends AbstractFailureAnalyzer<LockConfigurationException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, LockConfigurationException cause) {
		return new FailureAnalysis(cause.getMessage(), cause.getAction(), cause);
	}

}
