package com.example;

import java.util.concurrent.CompletionStage;

/** Where an application keeps reports, without blocking the caller. */
public interface ReportStore {

	CompletionStage<Void> write(Report report, long fencingToken);

}
